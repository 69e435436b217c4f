import type { Attempt } from '@keyscope/attempts';
import { arrival, client, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { type AttemptLog, createCompactAttemptLog, createMemoryAttemptLog } from '../../src/index.ts';

/** What the detector relies on of any AttemptLog, checked on each log keyscope has in memory. */
describe.each([
  ['memory', createMemoryAttemptLog],
  ['compact', createCompactAttemptLog],
] as [string, () => AttemptLog][])('the %s attempt log', (_name, create) => {
  it("hands back a key's attempts in the order they were appended, and nothing for a key it never saw", () => {
    const log = create();
    const attempts: Attempt[] = [
      client({ key: 'k', at: 0 }),
      server({ key: 'k', at: 0.1 }),
      arrival({ key: 'k', at: 0.2 }),
      server({ key: 'k', at: 5 }),
    ];
    for (const attempt of attempts) expect(log.append('k', attempt)).toBe(true);
    log.append('other', server({ key: 'other' }));
    expect(log.attemptsOf('k')).toEqual(attempts);
    expect(log.attemptsOf('never')).toEqual([]);
  });

  it('refuses a redelivered attempt by trace and span id, and keeps one of the same ids for another key', () => {
    const log = create();
    const first = server({ key: 'k', at: 1 });
    expect(log.append('k', first)).toBe(true);
    expect(log.append('k', { ...first, statusCode: 500 })).toBe(false);
    expect(log.append('k2', { ...first, key: 'k2' })).toBe(true);
    expect(log.attemptsOf('k')).toEqual([first]);
  });

  it('refuses redelivered attempts of a hot key, holding many attempts, as of a small one', () => {
    const log = create();
    const attempts = Array.from({ length: 40 }, (_, i) => server({ key: 'hot', at: i }));
    for (const attempt of attempts) expect(log.append('hot', attempt)).toBe(true);
    // One delivered again early and one late, and a span of another trace with a held span id.
    expect(log.append('hot', { ...attempts[2]! })).toBe(false);
    expect(log.append('hot', { ...attempts[39]! })).toBe(false);
    const sameSpanOtherTrace = { ...attempts[5]!, traceId: 'f'.repeat(32) };
    expect(log.append('hot', sameSpanOtherTrace)).toBe(true);
    expect(log.append('hot', { ...sameSpanOtherTrace })).toBe(false);
    expect(log.attemptsOf('hot')).toEqual([...attempts, sameSpanOtherTrace]);
  });

  it('forgets the keys last seen before the cutoff, and only those', () => {
    const log = create();
    log.append('old', server({ key: 'old', at: 10 }));
    const recent = [server({ key: 'recent', at: 10 }), server({ key: 'recent', at: 100 })];
    for (const attempt of recent) log.append('recent', attempt);
    log.expire(server({ at: 50 }).startUnixMillis);
    expect(log.attemptsOf('old')).toEqual([]);
    expect(log.attemptsOf('recent')).toEqual(recent);
    // A forgotten key starts again: its redelivery is new evidence.
    expect(log.append('old', server({ key: 'old', at: 10 }))).toBe(true);
  });
});
