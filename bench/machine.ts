import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

export interface Machine {
  cpuModel: string;
  cores: number;
  node: string;
  /** 1, 5 and 15 minute load averages: how busy the machine was, since benchmarks share it. */
  loadAverage: [number, number, number];
}

export function describeMachine(): Machine {
  const [one = 0, five = 0, fifteen = 0] = loadavg();
  return {
    cpuModel: cpuModel(),
    cores: availableParallelism(),
    node: process.version,
    loadAverage: [one, five, fifteen],
  };
}

function cpuModel(): string {
  try {
    const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    return /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown';
  } catch {
    // Not Linux: the figures still stand, only the label is missing.
    return 'unknown';
  }
}
