import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { runDemo } from '../src/demo.ts';
import type { RunningService } from '../src/serve.ts';

const dir = mkdtempSync(join(tmpdir(), 'keyscope-demo-'));
let service: RunningService | undefined;
afterAll(async () => {
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('keyscope demo', () => {
  it('serves, sends a node failover over OTLP/HTTP, and prints the grouped incidents and where to look', async () => {
    const lines: string[] = [];
    const config = resolveServeConfig({
      api: { port: 0 },
      db: { path: join(dir, 'demo.db') },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
    });
    service = await runDemo(config, { info: (line) => lines.push(line), error: (line) => lines.push(line) });
    const open = service.store.incidents.list({ status: 'open' }, { limit: 10 }).items;
    expect(open.length).toBeGreaterThan(0);
    expect(open.every((incident) => incident.routingEvent?.type === 'node_down')).toBe(true);
    const text = lines.join('\n');
    expect(text).toMatch(/keyscope opened \d+ incidents/);
    expect(text).toContain(open[0]!.title);
    const api = `http://127.0.0.1:${service.addresses.api.port}`;
    const lookup = /did it run twice\? (\S+)/.exec(text)![1]!;
    expect(lookup.startsWith(api)).toBe(true);
    expect(await (await fetch(lookup)).json()).toMatchObject({ ranTwice: true });
  }, 60_000);
});
