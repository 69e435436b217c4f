import { describe, expect, it } from 'vitest';
import { Admission } from '../src/receivers/admission.ts';

describe('Admission', () => {
  it('refuses a request beyond maxInFlightRequests until one is released', () => {
    const admission = new Admission({ maxInFlightRequests: 2, maxInFlightSpans: 100 });
    const first = admission.tryAdmit();
    const second = admission.tryAdmit();
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(admission.tryAdmit()).toBeUndefined();
    first?.release();
    expect(admission.tryAdmit()).toBeDefined();
  });

  it('refuses spans that would pass maxInFlightSpans and gives them back on release', () => {
    const admission = new Admission({ maxInFlightRequests: 10, maxInFlightSpans: 10 });
    const first = admission.tryAdmit()!;
    const second = admission.tryAdmit()!;
    expect(first.reserveSpans(6)).toBe(true);
    expect(second.reserveSpans(5)).toBe(false);
    expect(second.reserveSpans(4)).toBe(true);
    expect(admission.inFlight()).toEqual({ requests: 2, spans: 10 });
    first.release();
    expect(admission.inFlight()).toEqual({ requests: 1, spans: 4 });
  });

  it('admits a payload larger than maxInFlightSpans when nothing else is in flight', () => {
    const admission = new Admission({ maxInFlightRequests: 10, maxInFlightSpans: 10 });
    const big = admission.tryAdmit()!;
    expect(big.reserveSpans(50)).toBe(true);
    expect(admission.tryAdmit()!.reserveSpans(1)).toBe(false);
  });

  it('counts a slot released twice once', () => {
    const admission = new Admission({ maxInFlightRequests: 1, maxInFlightSpans: 10 });
    const slot = admission.tryAdmit()!;
    slot.reserveSpans(3);
    slot.release();
    slot.release();
    expect(admission.inFlight()).toEqual({ requests: 0, spans: 0 });
  });
});
