import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuAffinity } from '../cpu-affinity.ts';

/** The CPUs the kernel lets thread `tid` of process `pid` run on, as /proc lists them. */
const allowed = (pid: number, tid: number | string = pid) => {
  const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
  return /Cpus_allowed_list:\s*(\S+)/.exec(status)![1];
};

/** The CPU numbers of a list such as `0,2-3`. */
const expand = (list: string | undefined) =>
  (list ?? '').split(',').flatMap((part) => {
    const [from, to = from] = part.split('-').map(Number);
    return Array.from({ length: to! - from! + 1 }, (_, i) => from! + i);
  });

let child: ReturnType<typeof spawn> | undefined;
afterEach(() => child?.kill());

describe('pinning a process to CPUs', () => {
  it('is possible on this machine (two CPUs, taskset), as the persisted ingest section needs', () => {
    expect(cpuAffinity.available()).toBe(true);
  });

  it('pins every thread of a running process to each CPU in turn, or to the others, and gives it all back', async () => {
    // A node process has threads besides its main one (V8's helpers) from its start.
    child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30_000)'], { stdio: 'ignore' });
    await new Promise((resolve) => child!.once('spawn', resolve));
    const pid = child.pid!;
    await expect.poll(() => readdirSync(`/proc/${pid}/task`).length).toBeGreaterThan(1);
    for (const cpu of cpuAffinity.cpus()) {
      cpuAffinity.pin(pid, String(cpu));
      const threads = readdirSync(`/proc/${pid}/task`);
      for (const tid of threads) expect(allowed(pid, tid)).toBe(String(cpu));
      // The load generator's CPUs while the service is on `cpu`.
      cpuAffinity.pin(pid, cpuAffinity.othersThan(cpu));
      expect(expand(allowed(pid))).toEqual(cpuAffinity.cpus().filter((other) => other !== cpu));
    }
    cpuAffinity.pin(pid, cpuAffinity.all());
    expect(allowed(pid)).toBe(cpuAffinity.all());
  });

  it('pins a process whose threads come and go while taskset walks them', async () => {
    // Worker threads ending as fast as they start, as a store's checkpoint thread ends when the
    // service stops: a single taskset run fails about once in fifty here.
    const churn = `const { Worker } = require('node:worker_threads');
      const start = () => new Worker('0', { eval: true }).on('exit', start);
      for (let i = 0; i < 8; i++) start();`;
    child = spawn(process.execPath, ['-e', churn], { stdio: 'ignore' });
    await new Promise((resolve) => child!.once('spawn', resolve));
    const pid = child.pid!;
    await expect.poll(() => readdirSync(`/proc/${pid}/task`).length).toBeGreaterThan(8);
    for (let i = 0; i < 200; i++) cpuAffinity.pin(pid, i % 2 === 0 ? cpuAffinity.all() : '0');
    expect(allowed(pid)).toBe('0');
  });
});
