import { describe, expect, it } from 'vitest';
import {
  ANSWERED,
  ARRIVAL,
  CLIENT,
  childEvidence,
  coverageKindOf,
  DECIDED,
  figuresOf,
  HAS_SEND,
  INCOMPLETE,
  IS_DECISION,
  KEYS,
  KEYS_FULLY_VISIBLE,
  parentEvidence,
  resendBit,
  resendGap,
  routeMissesEvidence,
  SERVER,
  UNCOUNTED,
} from '../../src/coverage/coverage-rule.ts';
import { COVERAGE_COUNTS } from '../../src/coverage/scope-report.ts';

/** The bits of the named `TierCoverage` figures. */
function figures(...names: (typeof COVERAGE_COUNTS)[number][]): number {
  return names.reduce((bits, name) => bits | (1 << COVERAGE_COUNTS.indexOf(name)), 0);
}

/** The resend counts' mask. */
function resends(...counts: number[]): number {
  return counts.reduce((mask, count) => mask | resendBit(count), 0);
}

describe('the evidence coverage rule', () => {
  it('tells sends, arrivals and server attempts apart, and counts effects nowhere', () => {
    expect(coverageKindOf('client')).toBe(CLIENT);
    expect(coverageKindOf('arrival')).toBe(ARRIVAL);
    expect(coverageKindOf('server')).toBe(SERVER);
    expect(coverageKindOf('effect')).toBe(UNCOUNTED);
  });

  it('answers a send with an arrival or a server attempt under it, never with another send', () => {
    expect(parentEvidence(CLIENT, ARRIVAL)).toBe(ANSWERED);
    expect(parentEvidence(CLIENT, SERVER)).toBe(ANSWERED);
    expect(parentEvidence(CLIENT, CLIENT)).toBe(0);
    expect(childEvidence(CLIENT, ARRIVAL)).toBe(HAS_SEND);
    expect(childEvidence(CLIENT, SERVER)).toBe(HAS_SEND);
    expect(childEvidence(CLIENT, CLIENT)).toBe(0);
  });

  it("records an arrival's decision only from a server attempt under it, which is then no request of its own", () => {
    expect(parentEvidence(ARRIVAL, SERVER)).toBe(DECIDED);
    expect(childEvidence(ARRIVAL, SERVER)).toBe(IS_DECISION);
    expect(parentEvidence(ARRIVAL, ARRIVAL)).toBe(0);
    expect(parentEvidence(ARRIVAL, CLIENT)).toBe(0);
    // A server attempt under a server attempt proves nothing of either.
    expect(parentEvidence(SERVER, SERVER) | childEvidence(SERVER, SERVER)).toBe(0);
  });

  it('counts an arrival under its send with its decision as an arrival and a request, both complete', () => {
    expect(figuresOf(ARRIVAL, 'send', DECIDED | HAS_SEND)).toBe(
      figures('arrivals', 'arrivalsWithDecision', 'requests', 'requestsWithSend'),
    );
  });

  it('counts an arrival without its decision, or a request without its send, as incomplete', () => {
    expect(figuresOf(ARRIVAL, 'send', HAS_SEND)).toBe(
      figures('arrivals', 'requests', 'requestsWithSend') | INCOMPLETE,
    );
    expect(figuresOf(SERVER, 'send', 0)).toBe(figures('requests') | INCOMPLETE);
  });

  it("counts an arrival's decision as no request, and a request that names no parent not at all", () => {
    expect(figuresOf(SERVER, 'arrival', IS_DECISION)).toBe(0);
    expect(figuresOf(SERVER, '', 0)).toBe(0);
    // An untraced caller: the arrival counts, its missing send does not.
    expect(figuresOf(ARRIVAL, '', DECIDED)).toBe(figures('arrivals', 'arrivalsWithDecision'));
  });

  it('counts an answered send with its server span, and leaves an unanswered one to its route', () => {
    expect(figuresOf(CLIENT, '', ANSWERED)).toBe(figures('sends', 'sendsWithServerSpan'));
    expect(figuresOf(CLIENT, '', 0)).toBe(0);
    expect(routeMissesEvidence(1, resends(0), false)).toBe(true);
    expect(routeMissesEvidence(0, resends(0), false)).toBe(false);
  });

  it('numbers the key figures as the scope report stores them', () => {
    expect(COVERAGE_COUNTS[KEYS]).toBe('keys');
    expect(COVERAGE_COUNTS[KEYS_FULLY_VISIBLE]).toBe('keysFullyVisible');
  });

  it('sees a gap when a resend count below the highest seen is missing', () => {
    expect(resendGap(resends(0, 1, 2), false)).toBe(false);
    expect(resendGap(resends(1, 2), false)).toBe(true);
    expect(resendGap(resends(0, 2), false)).toBe(true);
    expect(resendGap(resends(), false)).toBe(false);
    expect(routeMissesEvidence(0, resends(2), false)).toBe(true);
  });

  it('lets the resend counts of a key that continues start above 0, and sees a gap between them', () => {
    expect(resendGap(resends(3, 4), true)).toBe(false);
    expect(resendGap(resends(3, 5), true)).toBe(true);
  });

  it('checks no resend count past thirty, nor a negative one', () => {
    expect(resendBit(30)).toBe(1 << 30);
    expect(resendBit(31)).toBe(0);
    expect(resendBit(-1)).toBe(0);
    expect(resendGap(resends(0, 31, 40), false)).toBe(false);
  });
});
