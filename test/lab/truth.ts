import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { decodeTracesJson, type Span, SpanKind } from '@keyscope/otlp';
import type { LedgerRow } from './ledger.ts';
import type { FailureSpec } from './scenarios.ts';

/** A failure as it happened: from the injection to the node serving again (a kill: restarted). */
export interface FailureWindow {
  readonly id: string;
  readonly type: FailureSpec['type'];
  readonly node: string;
  readonly startUnixMillis: number;
  readonly endUnixMillis: number;
}

/** One charge in the ledger, and whether its SERVER span reached the recording. */
export interface TruthExecution {
  readonly node: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly receivedUnixMillis: number;
  readonly chargedUnixMillis: number;
  readonly visible: boolean;
}

/** A key the ledger charged more than once. */
export interface TruthDuplicate {
  readonly key: string;
  /** In order of arrival. */
  readonly executions: readonly TruthExecution[];
  /**
   * The failure that caused it: the first window on the node of the first execution that the
   * interval from that request's arrival to the second charge overlaps; null when none does (a
   * slow request's timeout, a proxy's re-send, on a healthy node).
   */
  readonly windowId: string | null;
}

/** A key whose first charge is in the ledger but whose SERVER span is not in the recording. */
export interface LostFirstExecution {
  readonly key: string;
  readonly node: string;
  /** The key was charged again: a duplicate of which the spans show one execution at most. */
  readonly ranAgain: boolean;
}

/** `<scenario>.truth.json`: what really happened, from the ledger, against the recording. */
export interface LabTruth {
  readonly scenario: string;
  readonly description: string;
  readonly nodes: readonly string[];
  readonly windows: readonly FailureWindow[];
  /** Ledger rows, and distinct keys among them. */
  readonly charges: number;
  readonly keysCharged: number;
  readonly duplicates: readonly TruthDuplicate[];
  readonly lostFirstExecutions: readonly LostFirstExecution[];
}

export interface TruthInput {
  readonly scenario: string;
  readonly description: string;
  readonly nodes: readonly string[];
  readonly windows: readonly FailureWindow[];
  readonly ledger: readonly LedgerRow[];
  /** Span ids of the SERVER spans in the recording. */
  readonly recordedServerSpans: ReadonlySet<string>;
}

export function computeTruth(input: TruthInput): LabTruth {
  const byKey = new Map<string, TruthExecution[]>();
  for (const row of input.ledger) {
    const execution: TruthExecution = {
      node: row.node,
      traceId: row.traceId,
      spanId: row.spanId,
      receivedUnixMillis: row.receivedUnixMillis,
      chargedUnixMillis: row.chargedUnixMillis,
      visible: input.recordedServerSpans.has(row.spanId),
    };
    const executions = byKey.get(row.key);
    if (executions === undefined) byKey.set(row.key, [execution]);
    else executions.push(execution);
  }
  const duplicates: TruthDuplicate[] = [];
  const lostFirstExecutions: LostFirstExecution[] = [];
  for (const [key, executions] of [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    executions.sort((a, b) => a.receivedUnixMillis - b.receivedUnixMillis);
    const [first, second] = executions;
    if (!first!.visible) lostFirstExecutions.push({ key, node: first!.node, ranAgain: second !== undefined });
    if (second === undefined) continue;
    const window = input.windows.find(
      (w) =>
        w.node === first!.node &&
        first!.receivedUnixMillis <= w.endUnixMillis &&
        second.chargedUnixMillis >= w.startUnixMillis,
    );
    duplicates.push({ key, executions, windowId: window?.id ?? null });
  }
  return {
    scenario: input.scenario,
    description: input.description,
    nodes: input.nodes,
    windows: input.windows,
    charges: input.ledger.length,
    keysCharged: byKey.size,
    duplicates,
    lostFirstExecutions,
  };
}

/** Every span of a recording: gzipped OTLP/JSON lines, one export per line. */
export function readRecording(path: string): Span[] {
  const spans: Span[] = [];
  for (const line of gunzipSync(readFileSync(path)).toString('utf8').split('\n')) {
    if (line !== '') spans.push(...decodeTracesJson(new TextEncoder().encode(line)));
  }
  return spans;
}

export function serverSpanIds(spans: readonly Span[]): Set<string> {
  return new Set(spans.filter((span) => span.kind === SpanKind.SERVER).map((span) => span.spanId));
}
