import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';

/**
 * One charge, written by the node that made it before it answers (and fsynced), so a charge of a
 * node killed a moment later is still known: the lab's ground truth comes from here, not from
 * the spans.
 */
export interface LedgerRow {
  readonly key: string;
  /** `service.instance.id` of the node that charged. */
  readonly node: string;
  /** The SERVER span the charge ran under: whether it reached the recording says if it was seen. */
  readonly traceId: string;
  readonly spanId: string;
  /** When the request reached the node, and when the card was charged; Unix milliseconds. */
  readonly receivedUnixMillis: number;
  readonly chargedUnixMillis: number;
}

/** An append-only ledger file of JSON lines; each append is on disk before it returns. */
export class Ledger {
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, 'a');
  }

  append(row: LedgerRow): void {
    writeSync(this.fd, `${JSON.stringify(row)}\n`);
    fsyncSync(this.fd);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Every row of a ledger file; a torn last line (a node killed mid-write) is dropped. */
export function readLedger(path: string): LedgerRow[] {
  if (!existsSync(path)) return [];
  const rows: LedgerRow[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      rows.push(JSON.parse(line) as LedgerRow);
    } catch {
      // Only the last line can be torn, by a kill between write and fsync.
    }
  }
  return rows;
}
