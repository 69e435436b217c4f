import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTraces } from '@keyscope/otlp';
import { scenarios, simulate } from '@keyscope/simulator';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type KeyscopeProcess,
  postTraces,
  startKeyscope,
  stopKeyscope,
} from '../support/keyscope-process.ts';

/**
 * Durability: a request is acknowledged only after its effect is committed, so `kill -9` at any
 * moment loses nothing acknowledged, and redelivering what was not acknowledged creates no
 * duplicate finding or incident. Compared with an uninterrupted run of the same spans.
 */
const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), { seed: 9 });
const payloads: Uint8Array[] = [];
for (let i = 0; i < spans.length; i += 300) payloads.push(encodeTraces(spans.slice(i, i + 300)));

const dir = mkdtempSync(join(tmpdir(), 'keyscope-crash-'));
const running: KeyscopeProcess[] = [];
afterAll(async () => {
  for (const process of running) if (process.child.exitCode === null) process.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function start(db: string): Promise<KeyscopeProcess> {
  const process = await startKeyscope(['--db', join(dir, db)]);
  running.push(process);
  return process;
}

async function sendAll(process: KeyscopeProcess, from: number): Promise<void> {
  for (let i = from; i < payloads.length; i++)
    expect(await postTraces(process.otlpHttp, payloads[i]!)).toBe(200);
}

/** What the API says once the last tick has regrouped everything. */
async function outcome(process: KeyscopeProcess) {
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const findings = (await (await fetch(`${process.api}/api/v1/findings?limit=500`)).json()) as {
    items: { id: string; class: string; incidentId: string; executions: number }[];
  };
  const incidents = (await (await fetch(`${process.api}/api/v1/incidents?limit=500`)).json()) as {
    items: { id: string; keys: number; status: string }[];
  };
  return {
    findings: findings.items.map((f) => `${f.id} ${f.class} ${f.incidentId} ${f.executions}`).sort(),
    incidents: incidents.items.map((i) => `${i.id} ${i.keys} ${i.status}`).sort(),
  };
}

describe('kill -9 in the middle of ingest', () => {
  it('loses no acknowledged span and creates no duplicate incident after a restart', async () => {
    const uninterrupted = await start('uninterrupted.db');
    await sendAll(uninterrupted, 0);
    const expected = await outcome(uninterrupted);
    await stopKeyscope(uninterrupted);
    expect(expected.findings.length).toBeGreaterThan(0);

    const crashAt = Math.floor(payloads.length * 0.6);
    const first = await start('crashed.db');
    for (let i = 0; i < crashAt; i++) expect(await postTraces(first.otlpHttp, payloads[i]!)).toBe(200);
    // The next request is in flight when the process dies: committed or not, it was not
    // acknowledged, so the sender delivers it again.
    const inFlight = postTraces(first.otlpHttp, payloads[crashAt]!).catch(() => 0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    first.child.kill('SIGKILL');
    await first.exited;
    await inFlight;

    const restarted = await start('crashed.db');
    await sendAll(restarted, crashAt);
    expect(await outcome(restarted)).toEqual(expected);
    await stopKeyscope(restarted);
  }, 180_000);
});
