import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

/**
 * Which CPUs a process may run on, set with util-linux's `taskset` for every thread it has (`-a`):
 * the main thread, V8's helper threads, libuv's pool, the store's checkpoint worker. Threads it
 * starts later inherit the affinity of the thread that starts them.
 */
export const cpuAffinity = {
  /** Whether processes can be pinned here: taskset runs and there are two CPUs to split. */
  available(): boolean {
    if (availableParallelism() < 2) return false;
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  },

  /** Every thread of `pid` on `cpus`, a taskset list ('1', '0-1'). */
  pin(pid: number, cpus: string): void {
    execFileSync('taskset', ['-a', '-cp', cpus, String(pid)], { stdio: 'ignore' });
  },

  /** Every CPU of this machine, as a taskset list. */
  all(): string {
    return `0-${availableParallelism() - 1}`;
  },

  /** The machine's last CPU: the one a pinned service runs on. */
  last(): string {
    return String(availableParallelism() - 1);
  },

  /** Every CPU but the last, as a taskset list. */
  othersThanLast(): string {
    const cpus = availableParallelism();
    return cpus === 2 ? '0' : `0-${cpus - 2}`;
  },
};
