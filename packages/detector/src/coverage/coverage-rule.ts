/**
 * The evidence coverage's counting rule (docs/design.md, "Evidence coverage"): what a key's attempts
 * show of the evidence keyscope should see, and which `TierCoverage` figures they add to.
 * `evidence-coverage.ts` applies it to a key's attempts that end within the allowed lateness of each
 * other; `rules/evidence-gaps.ts` (the key page's warning), to every attempt of a key that keyscope
 * holds. Imports nothing: the web page bundles it through evidence-gaps.ts.
 *
 * A key counts once at each tier it had a request at (`keys`), and as fully visible there
 * (`keysFullyVisible`) unless one of its attempts there (`figuresOf`) or one of its routes there
 * (`routeMissesEvidence`) shows evidence missing.
 */

/** An attempt's kind as the rule tells them apart (`coverageKindOf`); an effect counts nowhere. */
export const UNCOUNTED = 0;
export const ARRIVAL = 1;
export const SERVER = 2;
export const CLIENT = 3;

export function coverageKindOf(kind: string): number {
  if (kind === 'client') return CLIENT;
  if (kind === 'arrival') return ARRIVAL;
  return kind === 'server' ? SERVER : UNCOUNTED;
}

/** A server-side span (an arrival or a server attempt) under a keyed send: the send reached a server. */
export function answersSend(childKind: number): boolean {
  return childKind === ARRIVAL || childKind === SERVER;
}

/** A server attempt under an arrival: the arrival's dedup decision, recorded. */
export function decidesArrival(childKind: number): boolean {
  return childKind === SERVER;
}

// What a parent and its child (same trace, the child naming the parent's span) show of each other:
// flags an attempt gathers until it is counted (`parentEvidence`, `childEvidence`).

/** An arrival with its decision under it. */
export const DECIDED = 1;
/** A server attempt under an arrival: that arrival's decision, not a request of its own. */
export const IS_DECISION = 2;
/** A request under a keyed send. */
export const HAS_SEND = 4;
/** A send with a server-side span under it. */
export const ANSWERED = 8;

export function parentEvidence(parentKind: number, childKind: number): number {
  if (parentKind === CLIENT) return answersSend(childKind) ? ANSWERED : 0;
  return parentKind === ARRIVAL && decidesArrival(childKind) ? DECIDED : 0;
}

export function childEvidence(parentKind: number, childKind: number): number {
  if (parentKind === CLIENT) return answersSend(childKind) ? HAS_SEND : 0;
  return parentKind === ARRIVAL && decidesArrival(childKind) ? IS_DECISION : 0;
}

/** The figures of `TierCoverage`, by their index in `COVERAGE_COUNTS` (scope-report.ts). */
export const ARRIVALS = 0;
export const ARRIVALS_WITH_DECISION = 1;
export const REQUESTS = 2;
export const REQUESTS_WITH_SEND = 3;
export const KEYS = 4;
export const KEYS_FULLY_VISIBLE = 5;
export const SENDS = 6;
export const SENDS_WITH_SERVER_SPAN = 7;
/** With the figures of `figuresOf`: some of the key's evidence at the attempt's tier is missing. */
export const INCOMPLETE = 1 << 8;

/**
 * The figures one counted attempt adds one to at its tier, as bits (`1 << figure`), and INCOMPLETE:
 * an arrival, decided or not; a request (a server-side attempt that names a parent and is not an
 * arrival's decision), with its send or not; an answered send, with its server span. An unanswered
 * send counts with its key's route (`routeMissesEvidence`), as its tier is the route's.
 */
export function figuresOf(kind: number, parentSpanId: string, flags: number): number {
  if (kind === CLIENT) return (flags & ANSWERED) !== 0 ? (1 << SENDS) | (1 << SENDS_WITH_SERVER_SPAN) : 0;
  let figures = 0;
  if (kind === ARRIVAL)
    figures |= (1 << ARRIVALS) | ((flags & DECIDED) !== 0 ? 1 << ARRIVALS_WITH_DECISION : INCOMPLETE);
  if (parentSpanId !== '' && (flags & IS_DECISION) === 0)
    figures |= (1 << REQUESTS) | ((flags & HAS_SEND) !== 0 ? 1 << REQUESTS_WITH_SEND : INCOMPLETE);
  return figures;
}

/** Resend counts above it are not checked (one bit each in a 31-bit mask). */
export const MAX_CHECKED_RESEND = 30;

/** A send's bit in its route's mask of resend counts seen; none past MAX_CHECKED_RESEND. */
export function resendBit(resendCount: number): number {
  return resendCount >= 0 && resendCount <= MAX_CHECKED_RESEND ? 1 << resendCount : 0;
}

/**
 * Whether some resend count is missing: below the highest seen, or, for a key that `continues` (its
 * earlier attempts were counted before), between the lowest and the highest seen. Counts 0..n all
 * seen are a mask of the form 0…01…1.
 */
export function resendGap(resends: number, continues: boolean): boolean {
  if (resends === 0) return false;
  const from = continues ? resends >>> (31 - Math.clz32(resends & -resends)) : resends;
  return (from & (from + 1)) !== 0;
}

/**
 * Whether a key's sends from one client service to one target leave its evidence incomplete at the
 * tier they lead to: some went unanswered (each also counts in `sends` there), or a resend count is
 * missing.
 */
export function routeMissesEvidence(unanswered: number, resends: number, continues: boolean): boolean {
  return unanswered > 0 || resendGap(resends, continues);
}
