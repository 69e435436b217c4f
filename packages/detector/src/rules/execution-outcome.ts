import type { Arrival, Attempt, Effect, ServerAttempt, SideEffect } from '@keyscope/attempts';
import { type SpanIndex, spanIndexOf } from './span-index.ts';

/**
 * Whether an admitted attempt (`miss`) executed its side effect. Many services give the key back
 * when a request fails after admission (a processor unavailable before the charge), so that the
 * retry runs, by design, once: such an attempt is no execution when its effect did not commit, and
 * a possible one when nobody can tell.
 *
 * - `executed`: the request succeeded, or it failed and the evidence says its effect committed;
 * - `not_executed`: it failed and the evidence says its effect did not commit;
 * - `unknown`: it failed and there is no evidence either way.
 */
export type ExecutionOutcome = 'executed' | 'not_executed' | 'unknown';

/** The outcome of each of one key's admitted attempts, judged from the key's whole evidence. */
export type ExecutionOutcomes = (execution: ServerAttempt) => ExecutionOutcome;

/** How many parents a side-effect span's chain is followed up through the key's own spans. */
const MAX_PARENT_HOPS = 8;

/**
 * Judges from the key's evidence, in this order:
 *
 * 1. The request failed when the decision span or the request's SERVER span (the arrival whose
 *    span id is the decision's parent, in the same trace) ended in error (status ERROR or HTTP
 *    5xx), or says `idempotency.released`. A request that did not fail executed.
 * 2. `idempotency.effect` on either span: `committed` on either wins, then `none`.
 * 3. Side-effect spans under the attempt: one that succeeded means committed. A side-effect span
 *    is under the attempt when its parent chain, followed through the key's spans, reaches the
 *    decision span or the SERVER span (not another request of the key); or, when a span between
 *    carries no key, when it started on the same node, in the same trace, within the request's
 *    time (a proxy's re-send runs on another node, a re-send to the same node after the answer).
 * 4. No side-effect span under it at all, while the mapping names them (`effectSpansDeclared`):
 *    the effect did not commit, even if the service said `unknown` — the span is the more specific
 *    evidence. One that failed leaves it unknown.
 *
 * The evidence is indexed once, on the first question.
 */
export function executionOutcomes(evidence: readonly Attempt[]): ExecutionOutcomes {
  let index: EvidenceIndex | undefined;
  return (execution) => {
    index ??= indexEvidence(evidence);
    const request = index.spans.get(execution.traceId, execution.parentSpanId);
    const arrival = request?.kind === 'arrival' ? request : undefined;
    const failed =
      execution.failed || execution.released || arrival?.failed === true || arrival?.released === true;
    if (!failed) return 'executed';

    const stated = strongest(execution.effect, arrival?.effect ?? '');
    if (stated === 'committed') return 'executed';
    if (stated === 'none') return 'not_executed';
    let committedSpan = false;
    let linkedSpans = 0;
    for (const effect of index.effectsByTrace.get(execution.traceId) ?? []) {
      if (!isUnder(effect, execution, arrival, index)) continue;
      linkedSpans++;
      if (!effect.failed) committedSpan = true;
    }
    if (committedSpan) return 'executed';
    if (linkedSpans === 0 && execution.effectSpansDeclared) return 'not_executed';
    return 'unknown';
  };
}

/**
 * How long an admitted attempt ran, as far as its spans show, from its request's start.
 *
 * `clipped`: its request's SERVER span ended at its caller's disconnect, before the handler did —
 * what the Node HTTP instrumentation does when the caller's socket closes (its caller timed out):
 * the span ends with Node's default status (200, or none) and no response sent, and the
 * decision's `idempotency.effect` still says `unknown`, which a service that answered would have
 * settled (`committed` or `none`). Such an execution ran at least until its caller left; the
 * decision and side-effect spans under it, which end when they end, may show it running later.
 */
export interface ExecutionSpan {
  startUnixMillis: number;
  /** The latest end of the request's SERVER span, its decision and the side-effect spans under it. */
  endUnixMillis: number;
  clipped: boolean;
}

/** The span of each of one key's admitted attempts (see `ExecutionSpan`). */
export function executionSpans(evidence: readonly Attempt[]): (execution: ServerAttempt) => ExecutionSpan {
  let index: EvidenceIndex | undefined;
  return (execution) => {
    index ??= indexEvidence(evidence);
    const request = index.spans.get(execution.traceId, execution.parentSpanId);
    const arrival = request?.kind === 'arrival' ? request : undefined;
    const span = arrival ?? execution;
    let endUnixMillis = Math.max(span.endUnixMillis, execution.endUnixMillis);
    for (const effect of index.effectsByTrace.get(execution.traceId) ?? []) {
      if (isUnder(effect, execution, arrival, index))
        endUnixMillis = Math.max(endUnixMillis, effect.endUnixMillis);
    }
    return { startUnixMillis: span.startUnixMillis, endUnixMillis, clipped: clipped(execution, arrival) };
  };
}

/** An admitted request whose own span ended unanswered and unfailed, its effect still `unknown`. */
function clipped(execution: ServerAttempt, arrival: Arrival | undefined): boolean {
  if (execution.outcome !== 'miss') return false;
  if (execution.failed || execution.released || arrival?.failed === true || arrival?.released === true)
    return false;
  // The request's own span says so: a decision span of its own that ended early (a middleware's)
  // while it stated `unknown` says nothing of when the request ended.
  const request = arrival ?? execution;
  if (request.effect !== 'unknown' || strongest(execution.effect, arrival?.effect ?? '') !== 'unknown')
    return false;
  const status = request.statusCode;
  // 200 is Node's default status for a response never written; a 200 the service did write came
  // with its effect settled (IdempotencyGate records `committed` as the execution completes).
  return status === 0 || status === 200;
}

interface EvidenceIndex {
  spans: SpanIndex;
  effectsByTrace: Map<string, SideEffect[]>;
}

function indexEvidence(evidence: readonly Attempt[]): EvidenceIndex {
  const effectsByTrace = new Map<string, SideEffect[]>();
  for (const attempt of evidence) {
    if (attempt.kind !== 'effect') continue;
    const list = effectsByTrace.get(attempt.traceId);
    if (list === undefined) effectsByTrace.set(attempt.traceId, [attempt]);
    else list.push(attempt);
  }
  return { spans: spanIndexOf(evidence), effectsByTrace };
}

/** `committed` over `none` over `unknown` over unstated. */
function strongest(a: Effect | '', b: Effect | ''): Effect | '' {
  for (const effect of ['committed', 'none', 'unknown'] as const)
    if (a === effect || b === effect) return effect;
  return '';
}

function isUnder(
  effect: SideEffect,
  execution: ServerAttempt,
  arrival: Arrival | undefined,
  index: EvidenceIndex,
): boolean {
  let parentSpanId = effect.parentSpanId;
  for (let hops = 0; parentSpanId !== '' && hops < MAX_PARENT_HOPS; hops++) {
    if (parentSpanId === execution.spanId || parentSpanId === arrival?.spanId) return true;
    const parent = index.spans.get(effect.traceId, parentSpanId);
    if (parent === undefined) break;
    // Under another request of the key (the retry's own effect).
    if (parent.kind === 'server' || parent.kind === 'arrival') return false;
    parentSpanId = parent.parentSpanId;
  }
  const request = arrival ?? execution;
  return (
    effect.placement.node === request.placement.node &&
    effect.placement.service === request.placement.service &&
    effect.startUnixMillis >= request.startUnixMillis &&
    effect.startUnixMillis <= Math.max(request.endUnixMillis, execution.endUnixMillis)
  );
}
