/**
 * What is missing from one key's evidence, read from its attempts alone: the key page's warning
 * that keyscope may not see every attempt of the key (sampling, lost spans). The same rules as the
 * scope report's coverage (`TierCoverage`), over all the attempts of the key that keyscope holds.
 * No imports: the web page bundles this file on its own (`@keyscope/detector/evidence-gaps`).
 */

/** The fields of an attempt this reads; an `Attempt` or the API's presented attempt both have them. */
export interface EvidenceAttempt {
  kind: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** CLIENT sends only. */
  resendCount?: number;
  target?: string;
}

export type EvidenceGap =
  /** A keyed send with no server-side span of the key under it. */
  | { kind: 'send_without_server_span'; traceId: string; spanId: string; resendCount: number; target: string }
  /** A keyed SERVER span with no dedup decision under it. */
  | { kind: 'arrival_without_decision'; traceId: string; spanId: string }
  /** Sends to `target` with resend counts up to the highest seen, of which `missing` never arrived. */
  | { kind: 'resend_gap'; target: string; missing: number[]; seen: number[] };

/** Resend counts past this are not checked (as in the scope report's coverage). */
const MAX_CHECKED_RESEND = 30;

export function evidenceGapsOf(attempts: readonly EvidenceAttempt[]): EvidenceGap[] {
  const id = (traceId: string, spanId: string) => `${traceId}/${spanId}`;
  /** Span ids that a server-side attempt names as its parent; and that a decision does. */
  const answered = new Set<string>();
  const decided = new Set<string>();
  for (const attempt of attempts) {
    if (attempt.kind !== 'server' && attempt.kind !== 'arrival') continue;
    answered.add(id(attempt.traceId, attempt.parentSpanId));
    if (attempt.kind === 'server') decided.add(id(attempt.traceId, attempt.parentSpanId));
  }
  const gaps: EvidenceGap[] = [];
  const resends = new Map<string, Set<number>>();
  for (const attempt of attempts) {
    const self = id(attempt.traceId, attempt.spanId);
    if (attempt.kind === 'arrival' && !decided.has(self))
      gaps.push({ kind: 'arrival_without_decision', traceId: attempt.traceId, spanId: attempt.spanId });
    if (attempt.kind !== 'client') continue;
    const target = attempt.target ?? '';
    const resendCount = attempt.resendCount ?? 0;
    if (!answered.has(self))
      gaps.push({
        kind: 'send_without_server_span',
        traceId: attempt.traceId,
        spanId: attempt.spanId,
        resendCount,
        target,
      });
    let seen = resends.get(target);
    if (seen === undefined) resends.set(target, (seen = new Set()));
    seen.add(resendCount);
  }
  for (const [target, seen] of resends) {
    const counts = [...seen]
      .filter((count) => count >= 0 && count <= MAX_CHECKED_RESEND)
      .sort((a, b) => a - b);
    const highest = counts.at(-1) ?? 0;
    const missing: number[] = [];
    for (let count = 0; count < highest; count++) if (!seen.has(count)) missing.push(count);
    if (missing.length > 0) gaps.push({ kind: 'resend_gap', target, missing, seen: counts });
  }
  return gaps;
}
