import { describe, expect, it } from 'vitest';
import { ShutdownStack } from '../src/shutdown-stack.ts';

describe('ShutdownStack', () => {
  it('stops what was started in reverse order, waiting for each step', async () => {
    const stops = new ShutdownStack();
    const order: string[] = [];
    stops.push(() => {
      order.push('store');
    });
    stops.push(async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push('receivers');
    });
    stops.push(() => {
      order.push('timers');
    });
    await stops.stop();
    expect(order).toEqual(['timers', 'receivers', 'store']);
  });

  it('runs its steps once however often it is stopped', async () => {
    const stops = new ShutdownStack();
    let closed = 0;
    stops.push(() => {
      closed++;
    });
    const first = stops.stop();
    expect(stops.stop()).toBe(first);
    await first;
    await stops.stop();
    expect(closed).toBe(1);
  });
});
