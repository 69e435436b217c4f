import { describe, expect, it } from 'vitest';
import { BackToBack } from '../src/back-to-back.ts';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('work done back to back while more is due', () => {
  it('runs again on the next turn while a step says more is due, with other work in between', async () => {
    const calls: boolean[] = [];
    const order: string[] = [];
    const work = new BackToBack((resume) => {
      calls.push(resume);
      order.push('step');
      // Work that arrives during a step (a request, a timer) runs before the next step.
      if (calls.length === 1) setImmediate(() => order.push('other'));
      return calls.length < 4;
    });
    work.start();
    expect(calls).toEqual([false]);
    expect(work.running).toBe(true);
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(calls).toEqual([false, true, true, true]);
    expect(order.slice(0, 3)).toEqual(['step', 'other', 'step']);
    expect(work.running).toBe(false);
  });

  it('ignores a start while a run is under way, and starts anew once it ended', async () => {
    let steps = 0;
    const work = new BackToBack(() => ++steps % 3 !== 0);
    work.start();
    work.start();
    work.start();
    for (let i = 0; i < 4; i++) await nextTurn();
    expect(steps).toBe(3);
    work.start();
    expect(steps).toBe(4);
  });

  it('runs no step after stop', async () => {
    let steps = 0;
    const work = new BackToBack(() => {
      steps++;
      return true;
    });
    work.start();
    await nextTurn();
    work.stop();
    for (let i = 0; i < 3; i++) await nextTurn();
    expect(steps).toBe(2);
    work.start();
    expect(steps).toBe(2);
  });
});
