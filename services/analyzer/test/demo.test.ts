import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { DEMO_DB_PATH, runDemo } from '../src/demo.ts';
import type { RunningService } from '../src/serve.ts';
import { csvObjects } from './api/export-csv.ts';

const dir = mkdtempSync(join(tmpdir(), 'keyscope-demo-'));
const path = join(dir, DEMO_DB_PATH);
let service: RunningService | undefined;
const lines: string[] = [];

beforeAll(async () => {
  // What an earlier run could have left: were it opened, startup would refuse it as damaged.
  writeFileSync(path, 'not a database');
  writeFileSync(`${path}-wal`, 'not a WAL');
  const config = resolveServeConfig({
    api: { port: 0 },
    db: { path },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
  });
  service = await runDemo(
    config,
    { info: (line) => lines.push(line), error: (line) => lines.push(line) },
    { fresh: true },
  );
}, 60_000);

afterAll(async () => {
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The lines as the README shows them: on the default ports, in the working directory, with the
 * incident id (derived from the failure's time, so different in every run) left out.
 */
function asInReadme(text: readonly string[]): string[] {
  const { addresses } = service!;
  return text.map((line) =>
    line
      .replaceAll(path, DEMO_DB_PATH)
      .replaceAll(`127.0.0.1:${addresses.api.port}`, '127.0.0.1:8080')
      .replaceAll(`127.0.0.1:${addresses.otlpHttp.port}`, '127.0.0.1:4318')
      .replaceAll(`127.0.0.1:${addresses.otlpGrpc.port}`, '127.0.0.1:4317')
      .replace(/inc_[0-9a-f]{24}/, 'inc_…'),
  );
}

describe('keyscope demo', () => {
  it('serves, sends a node failover over OTLP/HTTP, and prints the grouped incidents and where to look', async () => {
    const open = service!.store.incidents.list({ status: 'open' }, { limit: 10 }).items;
    expect(open.length).toBeGreaterThan(0);
    expect(open.every((incident) => incident.routingEvent?.type === 'node_down')).toBe(true);
    const text = lines.join('\n');
    expect(text).toMatch(/keyscope opened \d+ incidents/);
    expect(text).toContain(open[0]!.title);
    const api = `http://127.0.0.1:${service!.addresses.api.port}`;
    const lookup = /did it run twice\? (\S+)/.exec(text)![1]!;
    expect(lookup.startsWith(api)).toBe(true);
    expect(await (await fetch(lookup)).json()).toMatchObject({ ranTwice: true });
  });

  it('groups the fourteen keys that ran twice 7 + 7, one incident per node that died, each opened within its failure', () => {
    const open = service!.store.incidents.list({ status: 'open' }, { limit: 10 }).items;
    expect(open.map((incident) => incident.keys)).toEqual([7, 7]);
    expect(new Set(open.map((incident) => incident.routingEvent?.node)).size).toBe(2);
    for (const incident of open) {
      expect(incident.openedUnixMillis).toBeGreaterThanOrEqual(incident.routingEvent!.startUnixMillis);
      expect(incident.openedUnixMillis).toBeLessThan(incident.routingEvent!.endUnixMillis);
    }
  });

  it('empties the database an earlier run left, and says so first', () => {
    expect(lines[0]).toBe(`demo: database ${path}, emptied at start (--keep keeps it)`);
    expect(service!.store.incidents.list({}, { limit: 50 }).items.length).toBeGreaterThan(0);
  });

  it("exports a demo incident's keys as CSV over HTTP, one row per execution", async () => {
    const [incident] = service!.store.incidents.list({ status: 'open' }, { limit: 10 }).items;
    const api = `http://127.0.0.1:${service!.addresses.api.port}`;
    const detail = (await (await fetch(`${api}/api/v1/incidents/${incident!.id}`)).json()) as {
      findings: {
        key: string;
        executions: number;
        attempts: { kind: string; outcome?: string; spanId: string }[];
      }[];
    };
    const response = await fetch(`${api}/api/v1/incidents/${incident!.id}`, {
      headers: { accept: 'text/csv' },
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = csvObjects(await response.text());
    expect(rows).toHaveLength(detail.findings.reduce((sum, finding) => sum + finding.executions, 0));
    expect(rows.length).toBe(2 * incident!.keys);
    for (const finding of detail.findings) {
      const misses = finding.attempts.filter((a) => a.kind === 'server' && a.outcome === 'miss');
      expect(
        rows
          .filter((row) => row.key === finding.key)
          .map((row) => row.spanId)
          .sort(),
      ).toEqual(misses.map((a) => a.spanId).sort());
    }
  });

  it('prints what the README says it prints', () => {
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    const block = /It prints:\n\n```\n([\s\S]*?)\n```/.exec(readme)![1]!.split('\n');
    expect(asInReadme(block)).toEqual(asInReadme(lines));
  });
});
