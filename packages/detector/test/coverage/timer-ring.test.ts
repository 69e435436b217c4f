import { describe, expect, it } from 'vitest';
import { TimerRing } from '../../src/coverage/timer-ring.ts';

interface Timer {
  name: string;
  timeUnixMillis: number;
}

const T0 = Date.UTC(2025, 5, 2, 9, 0, 0);

/** A ring of 100 ms buckets over 2 s, whose items are due 1 s after their time, and what it handed back. */
function ring(onDue: (timer: Timer, ring: TimerRing<Timer>) => void = () => {}) {
  const due: string[] = [];
  const timers: TimerRing<Timer> = new TimerRing<Timer>({
    bucketMillis: 100,
    horizonMillis: 2000,
    delayMillis: 1000,
    timeOf: (timer) => timer.timeUnixMillis,
    onDue: (timer) => {
      due.push(timer.name);
      onDue(timer, timers);
    },
  });
  return { timers, due };
}

function timer(name: string, millis: number): Timer {
  return { name, timeUnixMillis: T0 + millis };
}

describe('the timer ring', () => {
  it('hands an item back once the bucket of its time plus the delay is final, and not before', () => {
    const { timers, due } = ring();
    timers.place(timer('a', 0));
    timers.advance(T0 + 1000);
    expect(due).toEqual([]);
    timers.advance(T0 + 1099);
    expect(due).toEqual([]);
    // The bucket 1000..1099 ms is final once the next one is reached.
    timers.advance(T0 + 1100);
    expect(due).toEqual(['a']);
    timers.advance(T0 + 5000);
    expect(due).toEqual(['a']);
  });

  it('hands back the items of several buckets, bucket by bucket, when time moves on by several', () => {
    const { timers, due } = ring();
    timers.place(timer('a', 0));
    timers.place(timer('c', 450));
    timers.place(timer('b', 220));
    timers.place(timer('later', 900));
    timers.advance(T0 + 1500);
    expect(due).toEqual(['a', 'b', 'c']);
  });

  it('says whether an item of a time is due by the last advance', () => {
    const { timers } = ring();
    timers.place(timer('a', 0));
    timers.advance(T0 + 1300);
    // Buckets before 1300..1399 ms are final: an item is due there when its time is before 300 ms.
    expect(timers.isDue(T0 + 150)).toBe(true);
    expect(timers.isDue(T0 + 299)).toBe(true);
    expect(timers.isDue(T0 + 300)).toBe(false);
  });

  it('hands back again an item its owner placed again, once its new time is due', () => {
    const { timers, due } = ring((item, ring) => {
      if (item.timeUnixMillis === T0) {
        item.timeUnixMillis = T0 + 500;
        ring.place(item);
      }
    });
    timers.place(timer('a', 0));
    timers.advance(T0 + 1100);
    expect(due).toEqual(['a']);
    timers.advance(T0 + 1500);
    expect(due).toEqual(['a']);
    timers.advance(T0 + 1600);
    expect(due).toEqual(['a', 'a']);
  });

  it('hands an item placed after its bucket was final back on the next advance', () => {
    const { timers, due } = ring();
    timers.place(timer('first', 0));
    timers.advance(T0 + 3000);
    timers.place(timer('late', 100));
    expect(due).toEqual(['first']);
    timers.advance(T0 + 3000);
    expect(due).toEqual(['first', 'late']);
  });

  it('holds an item due beyond its horizon until time comes near, then hands it back when due', () => {
    const { timers, due } = ring();
    timers.place(timer('now', 0));
    timers.place(timer('far', 60_000));
    timers.advance(T0 + 30_000);
    expect(due).toEqual(['now']);
    timers.advance(T0 + 61_000);
    expect(due).toEqual(['now']);
    timers.advance(T0 + 61_100);
    expect(due).toEqual(['now', 'far']);
  });

  it('hands back everything when time jumps past the safe integers, what was beyond its horizon on the next advance', () => {
    const { timers, due } = ring();
    timers.place(timer('a', 0));
    timers.place(timer('b', 1000));
    timers.place(timer('far', 60_000));
    timers.advance(Number.MAX_VALUE);
    expect(due.sort()).toEqual(['a', 'b']);
    timers.advance(Number.MAX_VALUE);
    expect(due.sort()).toEqual(['a', 'b', 'far']);
  });

  it('gives up its overdue items as the oldest, else the earliest bucket, else the far ones', () => {
    const { timers } = ring();
    timers.place(timer('first', 0));
    timers.advance(T0 + 3000);
    timers.place(timer('overdue', 100));
    timers.place(timer('soon', 2500));
    timers.place(timer('sooner', 2200));
    timers.place(timer('far', 90_000));
    expect(timers.takeOldest().map((item) => item.name)).toEqual(['overdue']);
    expect(timers.takeOldest().map((item) => item.name)).toEqual(['sooner']);
    expect(timers.takeOldest().map((item) => item.name)).toEqual(['soon']);
    expect(timers.takeOldest().map((item) => item.name)).toEqual(['far']);
    expect(timers.takeOldest()).toEqual([]);
  });

  it('gives up every item it holds once, and hands back none after', () => {
    const { timers, due } = ring();
    const items = [timer('a', 0), timer('b', 300), timer('far', 90_000)];
    for (const item of items) timers.place(item);
    timers.advance(T0 + 1200);
    timers.place(timer('overdue', 0));
    expect([...timers.takeAll()].map((item) => item.name).sort()).toEqual(['b', 'far', 'overdue']);
    timers.advance(T0 + 200_000);
    expect(due).toEqual(['a']);
  });
});
