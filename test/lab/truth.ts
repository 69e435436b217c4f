import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { decodeTracesJson, type Span, SpanKind } from '@keyscope/otlp';
import type { ClientSend } from './checkout-traffic.ts';
import type { LedgerAnswer, LedgerRow } from './ledger.ts';
import type { DecisionSpan, FailureSpec, StoreScope } from './scenarios.ts';

/** A failure as it happened: from the injection to the node serving again (a kill: restarted). */
export interface FailureWindow {
  readonly id: string;
  readonly type: FailureSpec['type'];
  readonly node: string;
  readonly startUnixMillis: number;
  readonly endUnixMillis: number;
}

/**
 * One charge in the ledger, and whether its SERVER span reached the recording. The fields after
 * `visible` are the recorder's since it records child decisions, answers and the client's sends;
 * a truth file recorded before then (README, "Recordings") lacks them.
 */
export interface TruthExecution {
  readonly node: string;
  readonly traceId: string;
  /** The SERVER span the charge ran under. */
  readonly spanId: string;
  readonly receivedUnixMillis: number;
  readonly chargedUnixMillis: number;
  /** The SERVER span is in the recording. */
  readonly visible: boolean;
  /**
   * The span the gate recorded the decision on (the SERVER span, or its `idempotency.check`
   * child), and whether it is in the recording: what keyscope counts an execution from. A child
   * check ends long before its SERVER span, so it can reach the recording when the SERVER span,
   * still open at a kill, does not.
   */
  readonly decisionSpanId?: string;
  readonly decisionVisible?: boolean;
  /** When the handler had its response ready; null when it never did (the node was killed first). */
  readonly handlerEndedUnixMillis?: number | null;
  /**
   * When the node handed its whole response to the connection; null when it never answered:
   * killed first, or the connection closed first (`callerLeftUnixMillis`).
   */
  readonly answeredUnixMillis?: number | null;
  /** When the connection closed before the answer: the caller, or the proxy on its behalf, left. */
  readonly callerLeftUnixMillis?: number | null;
  /**
   * The client's send this execution served (0 the first): the last send of the key that started
   * before the request reached the node; null when the client log has none.
   */
  readonly send?: number | null;
}

/** One send of a key, as the client saw it (its client log). */
export type TruthSend = Omit<ClientSend, 'key'>;

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
  /** Every send the client made of the key, in order (absent from an earlier truth file). */
  readonly sends?: readonly TruthSend[];
}

/** A key whose first charge is in the ledger but whose SERVER span is not in the recording. */
export interface LostFirstExecution {
  readonly key: string;
  readonly node: string;
  /** The key was charged again. */
  readonly ranAgain: boolean;
  /**
   * Its decision span is in the recording all the same (a child check that ended before the kill):
   * the spans then show the execution, if not how it ended. Where it is not, a key that ran again
   * is a duplicate of which the spans show one execution at most. Absent from an earlier truth
   * file, whose decisions were all on SERVER spans: then false.
   */
  readonly decisionVisible?: boolean;
}

/** How the scenario was set up, as far as what keyscope says about its duplicates depends on it. */
export interface TruthSetup {
  readonly proxy: 'nginx' | 'haproxy';
  /** Where the decision is recorded: the SERVER span, or an `idempotency.check` child of it. */
  readonly decisionSpan: DecisionSpan;
  /** Each node's own store, or one shared by the cluster. */
  readonly storeScope: StoreScope;
  /** How long a completed key is replayed. */
  readonly ttlMillis: number;
  /** How long the client waits for an answer before it gives up on a send, and how many sends it makes at most. */
  readonly clientTimeoutMillis: number;
  readonly clientMaxSends: number;
}

/**
 * `<scenario>.truth.json`: what really happened, from the ledger, against the recording; the
 * setup is absent from a truth file recorded before the lab wrote it.
 */
export interface LabTruth extends Partial<TruthSetup> {
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
  readonly setup: TruthSetup;
  readonly windows: readonly FailureWindow[];
  readonly ledger: readonly LedgerRow[];
  /** How each charged request ended, from the ledgers. */
  readonly answers: readonly LedgerAnswer[];
  /** The client log: every send. */
  readonly sends: readonly ClientSend[];
  /** Span ids of the SERVER spans in the recording. */
  readonly recordedServerSpans: ReadonlySet<string>;
  /** Span ids of the spans in the recording that carry a decision (`idempotency.outcome`). */
  readonly recordedDecisionSpans: ReadonlySet<string>;
}

export function computeTruth(input: TruthInput): LabTruth {
  const answers = new Map(input.answers.map((answer) => [`${answer.key}/${answer.spanId}`, answer]));
  const sendsOf = new Map<string, ClientSend[]>();
  for (const send of input.sends) {
    const sends = sendsOf.get(send.key);
    if (sends === undefined) sendsOf.set(send.key, [send]);
    else sends.push(send);
  }
  for (const sends of sendsOf.values()) sends.sort((a, b) => a.send - b.send);
  const byKey = new Map<string, TruthExecution[]>();
  for (const row of input.ledger) {
    const answer = answers.get(`${row.key}/${row.spanId}`);
    const decisionSpanId = row.decisionSpanId ?? row.spanId;
    // Sends of one key follow each other: the request belongs to the last one started before it arrived.
    const send = (sendsOf.get(row.key) ?? []).findLast((s) => s.startUnixMillis <= row.receivedUnixMillis);
    const execution: TruthExecution = {
      node: row.node,
      traceId: row.traceId,
      spanId: row.spanId,
      receivedUnixMillis: row.receivedUnixMillis,
      chargedUnixMillis: row.chargedUnixMillis,
      visible: input.recordedServerSpans.has(row.spanId),
      decisionSpanId,
      decisionVisible: input.recordedDecisionSpans.has(decisionSpanId),
      handlerEndedUnixMillis: answer?.handlerEndedUnixMillis ?? null,
      answeredUnixMillis: answer?.answeredUnixMillis ?? null,
      callerLeftUnixMillis: answer?.callerLeftUnixMillis ?? null,
      send: send?.send ?? null,
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
    if (!first!.visible)
      lostFirstExecutions.push({
        key,
        node: first!.node,
        ranAgain: second !== undefined,
        decisionVisible: first!.decisionVisible,
      });
    if (second === undefined) continue;
    const window = input.windows.find(
      (w) =>
        w.node === first!.node &&
        first!.receivedUnixMillis <= w.endUnixMillis &&
        second.chargedUnixMillis >= w.startUnixMillis,
    );
    const sends = (sendsOf.get(key) ?? []).map(({ key: _key, ...send }) => send);
    duplicates.push({ key, executions, windowId: window?.id ?? null, sends });
  }
  return {
    scenario: input.scenario,
    description: input.description,
    nodes: input.nodes,
    ...input.setup,
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

/** The spans that carry a dedup decision: a SERVER span, or a child of it such as `idempotency.check`. */
export function decisionSpans(spans: readonly Span[]): Span[] {
  return spans.filter(
    (span) => span.kind !== SpanKind.CLIENT && typeof span.attributes['idempotency.outcome'] === 'string',
  );
}

export function decisionSpanIds(spans: readonly Span[]): Set<string> {
  return new Set(decisionSpans(spans).map((span) => span.spanId));
}
