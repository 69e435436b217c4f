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
  /**
   * The span the gate recorded its decision on: the SERVER span's own id, or its `idempotency.check`
   * child's. Absent in ledgers written before the lab had child spans: then the SERVER span.
   */
  readonly decisionSpanId?: string;
  /** When the request reached the node, and when the card was charged; Unix milliseconds. */
  readonly receivedUnixMillis: number;
  readonly chargedUnixMillis: number;
}

/**
 * How a charged request ended on its node, written when its handler is done (a second kind of
 * line, after the charge's): a node killed before then leaves none.
 */
export interface LedgerAnswer {
  readonly key: string;
  /** The charge's SERVER span, which `LedgerRow.spanId` names too. */
  readonly spanId: string;
  /** When the handler had the charge's response ready. */
  readonly handlerEndedUnixMillis: number;
  /**
   * When the node handed its whole response to the connection (the response's `finish`); null when
   * the connection had closed first, so nothing was sent.
   */
  readonly answeredUnixMillis: number | null;
  /** When the connection closed before the response was sent (the caller, or the proxy, left); else null. */
  readonly callerLeftUnixMillis: number | null;
}

/**
 * An append-only ledger file of JSON lines; each charge is on disk before `append` returns. An
 * answer is written without fsync: a SIGKILL loses nothing the kernel has (only a power cut would).
 */
export class Ledger {
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, 'a');
  }

  append(row: LedgerRow): void {
    writeSync(this.fd, `${JSON.stringify(row)}\n`);
    fsyncSync(this.fd);
  }

  answered(answer: LedgerAnswer): void {
    writeSync(this.fd, `${JSON.stringify({ answer })}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Every line of a ledger file, parsed; a torn last line (a node killed mid-write) is dropped. */
function ledgerLines(path: string): unknown[] {
  if (!existsSync(path)) return [];
  const lines: unknown[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    try {
      lines.push(JSON.parse(line));
    } catch {
      // Only the last line can be torn, by a kill between write and fsync.
    }
  }
  return lines;
}

/** Every charge of a ledger file. */
export function readLedger(path: string): LedgerRow[] {
  return ledgerLines(path).filter((line): line is LedgerRow => !isAnswerLine(line));
}

/** Every answer of a ledger file: one per charged request whose handler ended. */
export function readAnswers(path: string): LedgerAnswer[] {
  return ledgerLines(path)
    .filter(isAnswerLine)
    .map((line) => line.answer);
}

function isAnswerLine(line: unknown): line is { answer: LedgerAnswer } {
  return typeof line === 'object' && line !== null && 'answer' in line;
}
