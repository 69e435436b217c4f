import { type Attempt, HTTP_METHODS } from '@keyscope/attempts';
import { spanIndexOf } from './span-index.ts';

/**
 * The request a server-side attempt of a key belongs to: for a dedup decision recorded on a child
 * of the request's SERVER span (an `idempotency.check` span, a gate's decision span), that SERVER
 * span — an arrival of the same service in the same trace, the decision's parent — when the key's
 * evidence holds it; else the attempt itself.
 */
export function requestOf(attempt: Attempt, evidence: readonly Attempt[]): Attempt {
  if (attempt.kind !== 'server' || attempt.parentSpanId === '') return attempt;
  const parent = spanIndexOf(evidence).get(attempt.traceId, attempt.parentSpanId);
  return parent !== undefined &&
    parent.kind === 'arrival' &&
    parent.placement.service === attempt.placement.service
    ? parent
    : attempt;
}

/** When the request of `attempt` ran: its SERVER span's start, the later of the two ends. */
export function requestWindowOf(
  attempt: Attempt,
  evidence: readonly Attempt[],
): { start: number; end: number } {
  const request = requestOf(attempt, evidence);
  return { start: request.startUnixMillis, end: Math.max(request.endUnixMillis, attempt.endUnixMillis) };
}

/**
 * The endpoint a server-side attempt counts at, with its service the dedup tier: its request's
 * operation (the SERVER span's `http.route`), so that a decision recorded on a child span and the
 * request it decided are one tier, named after the route the user knows. A decision whose SERVER
 * span carries no key (the evidence does not hold it) keeps its own operation, its span's name.
 */
export function endpointOf(attempt: Attempt, evidence: readonly Attempt[]): string {
  return requestOf(attempt, evidence).operation;
}

/**
 * Whether an operation reads as an endpoint a user calls — a URL path or route (`/payments`,
 * `POST /payments/{id}`), or an RPC method (`payments.v1.Payments/Charge`) — rather than the name
 * of an internal span, which is what a tier is named after when no request span carried its key.
 */
export function isRouteLike(operation: string): boolean {
  return operation.includes('/') || HTTP_METHOD_NAMES.has(operation);
}

/** A SERVER span named by the HTTP instrumentation without a route is named after its method. */
const HTTP_METHOD_NAMES: ReadonlySet<string> = new Set(HTTP_METHODS.filter((method) => method !== '_OTHER'));

/**
 * Whether the request span (the SERVER span) of a decision is missing from the key's evidence, so
 * that the decision span's own few milliseconds are not how long its request ran: the decision is
 * not the child of an arrival, its parent is no send of the key either (a decision recorded on the
 * SERVER span itself names its caller's CLIENT span), and the evidence shows this operation's
 * decisions are recorded on child spans — another decision of the same service and operation is
 * the child of an arrival, or the operation is named after an internal span, not a route. Such a
 * request's span died with its process (a SIGKILL takes the spans its SDK had not exported, and a
 * request still open had not ended), was dropped, or never carried the key.
 */
export function requestSpanUnseen(attempt: Attempt, evidence: readonly Attempt[]): boolean {
  if (attempt.kind !== 'server' || requestOf(attempt, evidence) !== attempt) return false;
  if (attempt.parentSpanId === '') return false;
  if (spanIndexOf(evidence).get(attempt.traceId, attempt.parentSpanId) !== undefined) return false;
  if (!isRouteLike(attempt.operation)) return true;
  return evidence.some(
    (other) =>
      other !== attempt &&
      other.kind === 'server' &&
      other.operation === attempt.operation &&
      other.placement.service === attempt.placement.service &&
      requestOf(other, evidence) !== other,
  );
}
