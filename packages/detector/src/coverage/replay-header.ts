import { type Attempt, endedBefore, type ServerAttempt } from '@keyscope/attempts';
import { endpointOf } from '../rules/endpoint.ts';
import type { FindingDraft } from '../rules/evaluate-key.ts';

/**
 * Whether a tier's replay header reaches keyscope. A service that records no `idempotency.outcome`
 * has its outcomes read from the HTTP response (`inferOutcomeFromHttp`): a replay is a response
 * carrying `Idempotent-Replayed: true`, which the HTTP instrumentation captures as
 * `http.response.header.idempotent-replayed`. OpenTelemetry's instrumentation-http reads response
 * headers from the response object once it ends (`getHeaders()`): a header set with
 * `res.setHeader` is there, one passed to `res.writeHead(status, headers)` is not. Such a service's
 * replays read as 2xx without the header, that is as executions, and every repeat of a key on one
 * node looks like a duplicate in one dedup store.
 *
 * The evidence, per tier, from outcomes inferred from HTTP only:
 *
 * - `replays`: inferred `hit`s, every key's, counted as they are kept: one is enough to show the
 *   header is captured at the tier;
 * - `repeats`: a key's requests in one store on one node that began after an earlier execution of
 *   the key there had ended — where a working store answers with a replay — counted by the
 *   evidence coverage join over its sample of keys (`keysOneIn`), within the allowed lateness of
 *   each other (`inferredRepeatsOf`).
 *
 * `missing` once `repeats` reaches the minimum (`detector.replayHeaderMinRepeats`) with no replay;
 * `captured` once there is one; `unconfirmed` in between.
 */
export type ReplayHeaderVerdict = 'captured' | 'missing' | 'unconfirmed';

export interface TierReplayHeader {
  verdict: ReplayHeaderVerdict;
  replays: number;
  repeats: number;
  /** The likely cause and its fix, for `missing`; null otherwise. */
  advice: string | null;
}

export const REPLAY_HEADER_ADVICE =
  "This tier's outcomes are read from HTTP responses, and none of its repeats of a key on one node showed a replay: the replay header is most likely set with res.writeHead(status, headers), which OpenTelemetry's HTTP instrumentation does not capture, so every replay reads as an execution. Set it with res.setHeader('Idempotent-Replayed', 'true') before the response is written, or record idempotency.outcome on the span. If the header is captured, the store replays nothing: check that it keeps admitted keys.";

/** The tier's replay header, from its counts; null for a tier with no outcome inferred from HTTP to judge by. */
export function replayHeaderOf(
  replays: number,
  repeats: number,
  minRepeats: number,
): TierReplayHeader | null {
  if (replays === 0 && repeats === 0) return null;
  const verdict: ReplayHeaderVerdict =
    replays > 0 ? 'captured' : repeats >= minRepeats ? 'missing' : 'unconfirmed';
  return { verdict, replays, repeats, advice: verdict === 'missing' ? REPLAY_HEADER_ADVICE : null };
}

/** An inferred `miss` or `hit` of one key at one tier (`isInferredDecision`), as far as repeats go. */
export type InferredDecision = Pick<
  ServerAttempt,
  'startUnixMillis' | 'endUnixMillis' | 'store' | 'outcome'
> & {
  readonly placement: { readonly node: string };
};

/**
 * How many of one key's inferred decisions at one tier are repeats in one store on one node: a
 * decision that began after an earlier `miss` there had ended (`endedBefore`, which allows for a
 * millisecond clock). Overlapping requests are left out: a store without an in-flight lock
 * executes a concurrent repeat, replay header or not.
 */
export function inferredRepeatsOf(decisions: readonly InferredDecision[]): number {
  let repeats = 0;
  for (const decision of decisions) {
    const follows = decisions.some(
      (earlier) =>
        earlier !== decision &&
        earlier.outcome === 'miss' &&
        earlier.store === decision.store &&
        earlier.placement.node === decision.placement.node &&
        endedBefore(earlier.endUnixMillis, decision.startUnixMillis),
    );
    if (follows) repeats++;
  }
  return repeats;
}

/** Whether `attempt` is a `miss` or `hit` read from an HTTP response: what `InferredDecision`s are made of. */
export function isInferredDecision(
  attempt: Attempt,
): attempt is ServerAttempt & { outcome: 'miss' | 'hit'; outcomeFrom: 'http' } {
  return (
    attempt.kind === 'server' &&
    attempt.outcomeFrom === 'http' &&
    (attempt.outcome === 'miss' || attempt.outcome === 'hit')
  );
}

/**
 * The finding as it pages: a duplicate that a lost replay header would explain as well — executions
 * in one store, on one node, one after the other (`ttl_expired`), each read as a `miss` from an
 * HTTP response alone — at a tier that has shown no replay (`tierShowsReplays` false) is `high`,
 * never a critical page, with `severityReason` `replay_unseen`. Any other draft is returned as is.
 * Until a tier shows a replay, nothing tells such a repeat from a replay whose header went
 * uncaptured; once it does, its findings are judged again at their class's severity.
 */
export function withReplayDoubt(draft: FindingDraft, tierShowsReplays: boolean): FindingDraft {
  if (tierShowsReplays || draft.class !== 'same_store_duplicate' || draft.cause !== 'ttl_expired')
    return draft;
  const executions = draft.attempts.filter(
    (a): a is ServerAttempt =>
      a.kind === 'server' &&
      a.outcome === 'miss' &&
      a.placement.service === draft.service &&
      endpointOf(a, draft.attempts) === draft.operation,
  );
  const first = executions[0];
  if (first === undefined) return draft;
  const inferredOnOneNode = executions.every(
    (a) => a.outcomeFrom === 'http' && a.placement.node === first.placement.node && a.store === first.store,
  );
  return inferredOnOneNode ? { ...draft, severity: 'high', severityReason: 'replay_unseen' } : draft;
}
