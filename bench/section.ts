import type { BenchContext } from './bench-context.ts';
import type { Row } from './table.ts';

/**
 * One part of the benchmark. Sections run one after another in one process (none runs while
 * another is timing), each returns its rows; a later one may add rows for its own measurements
 * without touching the others.
 */
export interface Section {
  name: string;
  run(context: BenchContext): Promise<Row[]>;
}
