import { loggedSpanId } from '@keyscope/otlp';
import type { Attempt } from './attempt.ts';

/**
 * Whether `attempt` is a decision a log record stated inside the span `parentSpanId` (a record
 * logged in a span becomes its child with span id `loggedSpanId`, starting and ending at the
 * record's time: see log-record-spans.ts in @keyscope/otlp). The instant is checked first: it
 * spares hashing the ids of every decision span, which lasts.
 */
export function isLoggedDecision(attempt: Attempt): boolean {
  return (
    attempt.kind === 'server' &&
    attempt.startUnixMillis === attempt.endUnixMillis &&
    attempt.parentSpanId !== '' &&
    attempt.spanId === loggedSpanId(attempt.traceId, attempt.parentSpanId)
  );
}

/**
 * One key's attempts without the logged decisions that a span also records: a decision recorded
 * both as a span and as a log record is one execution, not two. A decision logged inside span P is
 * left out when, in the same trace, a span that is not a log record records a decision for the
 * key and is P (the decision span the record was logged in) or a child of P (the decision span of
 * the request P the record was logged in). A logged decision no span records stays: the only
 * record of that execution.
 *
 * `attempts` is only read; when nothing is left out, it is returned as it is.
 */
export function withoutRepeatedLogDecisions(attempts: readonly Attempt[]): readonly Attempt[] {
  let logged: Set<Attempt> | null = null;
  for (const attempt of attempts) if (isLoggedDecision(attempt)) (logged ??= new Set()).add(attempt);
  if (logged === null) return attempts;
  // Where the spans' own decisions are: their span and their parent, by trace.
  const recorded = new Set<string>();
  for (const attempt of attempts) {
    if (attempt.kind !== 'server' || logged.has(attempt)) continue;
    recorded.add(`${attempt.traceId}/${attempt.spanId}`);
    if (attempt.parentSpanId !== '') recorded.add(`${attempt.traceId}/${attempt.parentSpanId}`);
  }
  const kept = attempts.filter(
    (attempt) => !logged.has(attempt) || !recorded.has(`${attempt.traceId}/${attempt.parentSpanId}`),
  );
  return kept.length === attempts.length ? attempts : kept;
}
