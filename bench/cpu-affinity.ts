import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

/**
 * How many CPUs this process may use, read once when it starts: `availableParallelism()` follows
 * the process's own affinity, and the bench pins itself for some runs.
 */
const CPU_COUNT = availableParallelism();

/** How many times `pin` runs taskset before it gives up. */
const PIN_ATTEMPTS = 5;

/**
 * Which CPUs a process may run on, set with util-linux's `taskset` for every thread it has (`-a`):
 * the main thread, V8's helper threads, libuv's pool, the store's checkpoint worker. Threads it
 * starts later inherit the affinity of the thread that starts them.
 */
export const cpuAffinity = {
  /** Whether processes can be pinned here: taskset runs and there are two CPUs to split. */
  available(): boolean {
    if (CPU_COUNT < 2) return false;
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  },

  /**
   * Every thread of `pid` on `cpus`, a taskset list ('1', '0-1'). taskset lists the threads and
   * then sets each, and fails if one ended in between (a store's checkpoint thread ends as the
   * service stops): it is run again, so every thread still running gets the affinity.
   */
  pin(pid: number, cpus: string): void {
    for (let attempt = 1; ; attempt++) {
      try {
        execFileSync('taskset', ['-a', '-cp', cpus, String(pid)], { stdio: 'ignore' });
        return;
      } catch (error) {
        if (attempt === PIN_ATTEMPTS) throw error;
      }
    }
  },

  /** Every CPU of this machine, as a taskset list. */
  all(): string {
    return `0-${CPU_COUNT - 1}`;
  },

  /** This machine's CPUs by number: the ones a pinned service takes turns on. */
  cpus(): number[] {
    return Array.from({ length: CPU_COUNT }, (_, cpu) => cpu);
  },

  /** Every CPU but `cpu`, as a taskset list. */
  othersThan(cpu: number): string {
    return this.cpus()
      .filter((other) => other !== cpu)
      .join(',');
  },
};
