import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS } from '@keyscope/analyzer';
import { KeyscopeStore } from '@keyscope/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceProcess } from '../service-process-handle.ts';
import { simulatedPayloads } from '../workloads/simulated-payloads.ts';

/** Posts every payload to the service, one at a time, each answered 200. */
async function postAll(tracesUrl: string, bodies: readonly Uint8Array[]): Promise<void> {
  for (const body of bodies) {
    const response = await fetch(tracesUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body,
    });
    expect(response.status).toBe(200);
  }
}

describe('the embedded service in a process of its own', () => {
  let dir: string;
  let service: ServiceProcess;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'keyscope-bench-service-'));
    service = ServiceProcess.start();
  });

  afterAll(() => {
    service.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits what it is sent, then reports the spans it consumed and the CPU it used', async () => {
    const workload = simulatedPayloads(2_000, 1);
    for (const run of [1, 2]) {
      const dbPath = join(dir, `run-${run}.db`);
      const { tracesUrl, execArgv } = await service.startServiceWithFlags(dbPath, workload.endUnixMillis);
      expect(tracesUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/traces$/);
      // Measured as `keyscope serve` runs: with its Node.js flags.
      expect(execArgv).toEqual(expect.arrayContaining([...SERVICE_NODE_FLAGS]));
      await postAll(tracesUrl, workload.bodies);
      const stopped = await service.stopService();
      expect(stopped.spans).toBe(workload.spans);
      expect(stopped.cpuSeconds).toBeGreaterThan(0);
      // Stopped means closed: the database is whole and holds the attempts.
      const store = new KeyscopeStore({ path: dbPath });
      try {
        expect(store.counts().attempts).toBeGreaterThan(0);
      } finally {
        store.close();
      }
    }
  });

  it('counts CPU time from startMeasuring on, not what the service did before', async () => {
    const workload = simulatedPayloads(20_000, 1);
    const busy = await service.startService(join(dir, 'busy.db'), workload.endUnixMillis);
    await postAll(busy, workload.bodies);
    const counted = await service.stopService();
    const idle = await service.startService(join(dir, 'idle.db'), workload.endUnixMillis);
    await postAll(idle, workload.bodies);
    await service.startMeasuring();
    const afterMark = await service.stopService();
    expect(afterMark.spans).toBe(workload.spans);
    expect(afterMark.cpuSeconds).toBeLessThan(counted.cpuSeconds / 4);
  });

  it('stops after checkpointing what a run left in the WAL, and reports the CPU that took apart', async () => {
    const workload = simulatedPayloads(20_000, 1);
    const tracesUrl = await service.startService(join(dir, 'checkpointed.db'), workload.endUnixMillis);
    await postAll(tracesUrl, workload.bodies);
    const stopped = await service.stopService();
    expect(stopped.spans).toBe(workload.spans);
    // Megabytes of pages copied: well above nothing, well below the run itself.
    expect(stopped.checkpointCpuSeconds).toBeGreaterThan(0);
    expect(stopped.checkpointCpuSeconds).toBeLessThan(stopped.cpuSeconds);
  });

  it('refuses to stop a service it is not running', async () => {
    await expect(service.stopService()).rejects.toThrow('the service is not running');
  });
});
