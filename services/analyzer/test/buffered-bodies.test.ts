import { describe, expect, it } from 'vitest';
import { BufferedBodies } from '../src/receivers/buffered-bodies.ts';

describe('BufferedBodies', () => {
  it('refuses bytes past maxBytes until another body releases its own', () => {
    const buffered = new BufferedBodies(100);
    const first = buffered.open();
    const second = buffered.open();
    expect(first.add(60)).toBe(true);
    expect(second.add(50)).toBe(false);
    expect(second.add(40)).toBe(true);
    expect(buffered.heldBytes()).toBe(100);
    first.release();
    expect(buffered.heldBytes()).toBe(40);
    expect(second.add(50)).toBe(true);
  });

  it('lets one body past maxBytes while no other body is buffered', () => {
    const buffered = new BufferedBodies(100);
    const big = buffered.open();
    expect(big.add(80)).toBe(true);
    expect(big.add(80)).toBe(true);
    expect(buffered.open().add(1)).toBe(false);
  });

  it('counts a body released twice once', () => {
    const buffered = new BufferedBodies(100);
    const body = buffered.open();
    body.add(30);
    body.release();
    body.release();
    expect(buffered.heldBytes()).toBe(0);
  });
});
