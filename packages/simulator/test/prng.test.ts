import { describe, expect, it } from 'vitest';
import { Prng } from '../src/prng.ts';

describe('Prng', () => {
  it('repeats the same stream for the same seed', () => {
    const a = new Prng(42);
    const b = new Prng(42);
    expect(Array.from({ length: 100 }, () => a.uint32())).toEqual(
      Array.from({ length: 100 }, () => b.uint32()),
    );
  });

  it('gives different streams for different seeds', () => {
    const a = new Prng(1);
    const b = new Prng(2);
    expect(Array.from({ length: 10 }, () => a.uint32())).not.toEqual(
      Array.from({ length: 10 }, () => b.uint32()),
    );
  });

  it('draws floats in [0, 1) and integers in their half-open range', () => {
    const rng = new Prng(7);
    const floats = Array.from({ length: 10_000 }, () => rng.float());
    const ints = new Set(Array.from({ length: 10_000 }, () => rng.int(3, 6)));
    expect(Math.min(...floats)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...floats)).toBeLessThan(1);
    expect([...ints].sort()).toEqual([3, 4, 5]);
  });

  it('writes trace and span ids as lowercase hex of the right length', () => {
    const rng = new Prng(9);
    const ids = Array.from({ length: 1000 }, () => rng.hex(32) + rng.hex(16)).join('\n');
    expect(ids).toMatch(/^([0-9a-f]{48}\n)*[0-9a-f]{48}$/);
  });

  it('writes version 4 UUIDs', () => {
    const rng = new Prng(3);
    expect(rng.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('draws log-normal latencies around the given median and 99th percentile', () => {
    const rng = new Prng(11);
    const samples = Array.from({ length: 20_000 }, () => rng.logNormal(600, 1800)).sort((a, b) => a - b);
    expect(samples[10_000]!).toBeGreaterThan(570);
    expect(samples[10_000]!).toBeLessThan(630);
    expect(samples[19_800]!).toBeGreaterThan(1650);
    expect(samples[19_800]!).toBeLessThan(1950);
  });
});
