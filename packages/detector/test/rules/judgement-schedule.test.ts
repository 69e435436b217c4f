import { describe, expect, it } from 'vitest';
import { JudgementSchedule, LARGE_KEY_ATTEMPTS } from '../../src/rules/judgement-schedule.ts';

describe('JudgementSchedule', () => {
  it('judges a small key at every change', () => {
    const schedule = new JudgementSchedule(10_000);
    schedule.judged('k1', LARGE_KEY_ATTEMPTS);

    expect(schedule.judgesNow('k1', LARGE_KEY_ATTEMPTS)).toBe(true);
  });

  it('judges a large key again only once its attempts doubled since its last judgement', () => {
    const schedule = new JudgementSchedule(10_000);
    schedule.judged('k1', 100);

    expect(schedule.judgesNow('k1', 199)).toBe(false);
    expect(schedule.judgesNow('k1', 200)).toBe(true);
  });

  it('judges a key that reached maxAttemptsPerKey at once', () => {
    const schedule = new JudgementSchedule(150);
    schedule.judged('k1', 100);

    expect(schedule.judgesNow('k1', 150)).toBe(true);
  });

  it('keeps deferred keys in key order until each is judged, also when its memory is forgotten', () => {
    const schedule = new JudgementSchedule(10_000);
    schedule.defer('k2');
    schedule.defer('k1');
    schedule.forget('k1');
    expect(schedule.deferredKeys()).toEqual(['k1', 'k2']);

    schedule.judged('k1', 100);

    expect(schedule.deferredKeys()).toEqual(['k2']);
    expect(schedule.deferredCount).toBe(1);
  });

  it('judges a forgotten key at its next change as a new key', () => {
    const schedule = new JudgementSchedule(10_000);
    schedule.judged('k1', 100);
    schedule.forget('k1');

    expect(schedule.judgesNow('k1', 101)).toBe(true);
  });
});
