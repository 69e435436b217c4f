import { describe, expect, it } from 'vitest';
import { endedBefore } from '../src/span-order.ts';

const END = 1_767_225_600_123.4;

describe('one request ended before another began, as span times say', () => {
  it('reads a start with a fraction of a millisecond as it is', () => {
    expect(endedBefore(END, END + 0.001)).toBe(true);
    expect(endedBefore(END, END)).toBe(true);
    expect(endedBefore(END, END - 0.2)).toBe(false);
  });

  it('reads a start in whole milliseconds, as the JS SDK records it, as up to a millisecond later', () => {
    // Recorded 0.4 ms before the end: it may have begun up to a millisecond after it was stamped.
    expect(endedBefore(END, Math.floor(END))).toBe(true);
    expect(endedBefore(Math.floor(END) + 0.999, Math.floor(END))).toBe(true);
    expect(endedBefore(Math.floor(END) + 1, Math.floor(END))).toBe(false);
    expect(endedBefore(END, Math.floor(END) - 1)).toBe(false);
  });
});
