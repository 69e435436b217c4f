import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuAffinity } from '../cpu-affinity.ts';

/** The CPUs the kernel lets thread `tid` of process `pid` run on, as /proc lists them. */
const allowed = (pid: number, tid: number | string = pid) => {
  const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
  return /Cpus_allowed_list:\s*(\S+)/.exec(status)![1];
};

let child: ReturnType<typeof spawn> | undefined;
afterEach(() => child?.kill());

describe('pinning a process to CPUs', () => {
  it('is possible on this machine (two CPUs, taskset), as the persisted ingest section needs', () => {
    expect(cpuAffinity.available()).toBe(true);
  });

  it('pins every thread of a running process to one CPU and gives it all back', async () => {
    // A node process has threads besides its main one (V8's helpers) from its start.
    child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30_000)'], { stdio: 'ignore' });
    await new Promise((resolve) => child!.once('spawn', resolve));
    const pid = child.pid!;
    await expect.poll(() => readdirSync(`/proc/${pid}/task`).length).toBeGreaterThan(1);
    cpuAffinity.pin(pid, cpuAffinity.last());
    const threads = readdirSync(`/proc/${pid}/task`);
    for (const tid of threads) expect(allowed(pid, tid)).toBe(cpuAffinity.last());
    cpuAffinity.pin(pid, cpuAffinity.all());
    expect(allowed(pid)).toBe(cpuAffinity.all());
    expect(cpuAffinity.othersThanLast()).not.toContain(cpuAffinity.last());
  });
});
