import {
  ARRIVAL,
  answersSend,
  CLIENT,
  coverageKindOf,
  decidesArrival,
  resendBit,
  resendGap,
} from '../coverage/coverage-rule.ts';

/**
 * What is missing from one key's evidence, read from its attempts alone: the key page's warning
 * that keyscope may not see every attempt of the key (sampling, lost spans). The rule of the scope
 * report's coverage (`TierCoverage`, coverage/coverage-rule.ts), over all the attempts of the key
 * that keyscope holds, however far apart they end: what an arrival and a send wait for, and the
 * resend counts, here per target. The web page bundles this file on its own
 * (`@keyscope/detector/evidence-gaps`): it imports only the rule, which imports nothing.
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

export function evidenceGapsOf(attempts: readonly EvidenceAttempt[]): EvidenceGap[] {
  const id = (traceId: string, spanId: string) => `${traceId}/${spanId}`;
  /** Span ids that a server-side span names as its parent; and that a decision does. */
  const answered = new Set<string>();
  const decided = new Set<string>();
  for (const attempt of attempts) {
    const kind = coverageKindOf(attempt.kind);
    if (answersSend(kind)) answered.add(id(attempt.traceId, attempt.parentSpanId));
    if (decidesArrival(kind)) decided.add(id(attempt.traceId, attempt.parentSpanId));
  }
  const gaps: EvidenceGap[] = [];
  /** The resend counts seen, per target (`resendBit`). */
  const resends = new Map<string, number>();
  for (const attempt of attempts) {
    const kind = coverageKindOf(attempt.kind);
    const self = id(attempt.traceId, attempt.spanId);
    if (kind === ARRIVAL && !decided.has(self))
      gaps.push({ kind: 'arrival_without_decision', traceId: attempt.traceId, spanId: attempt.spanId });
    if (kind !== CLIENT) continue;
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
    resends.set(target, (resends.get(target) ?? 0) | resendBit(resendCount));
  }
  for (const [target, mask] of resends) {
    // Every attempt of the key is here: its resend counts start at 0.
    if (!resendGap(mask, false)) continue;
    const seen: number[] = [];
    const missing: number[] = [];
    for (let count = 0; count <= 31 - Math.clz32(mask); count++)
      ((mask & (1 << count)) !== 0 ? seen : missing).push(count);
    gaps.push({ kind: 'resend_gap', target, missing, seen });
  }
  return gaps;
}
