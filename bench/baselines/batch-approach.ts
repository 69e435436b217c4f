import { type AttemptRow, appendAttemptRows } from './attempt-rows.ts';

/**
 * The batch approach end to end, minus reading files: decode every payload with protobufjs,
 * flatten the decisions into rows, then `load` them into a database and query it. Returns the
 * keys the query found.
 */
export async function runBatchApproach(
  bodies: readonly Uint8Array[],
  load: (rows: readonly AttemptRow[]) => Promise<string[]> | string[],
): Promise<string[]> {
  const rows: AttemptRow[] = [];
  for (const body of bodies) appendAttemptRows(body, rows);
  return load(rows);
}
