import { describe, expect, it } from 'vitest';
import { createAttributes } from '../src/attributes.ts';

describe('createAttributes', () => {
  it('inherits nothing a sender could name', () => {
    const attributes = createAttributes();
    for (const key of ['toString', 'constructor', 'hasOwnProperty', '__proto__', 'valueOf']) {
      expect(key in attributes).toBe(false);
    }
  });

  it('stores __proto__ as an ordinary own property', () => {
    const attributes = createAttributes();
    const key = '__proto__';
    attributes[key] = 'value';
    expect(Object.keys(attributes)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(attributes)).toBe(Object.getPrototypeOf(createAttributes()));
  });

  it('shares a prototype nobody can add keys to', () => {
    const prototype = Object.getPrototypeOf(createAttributes());
    expect(Object.isFrozen(prototype)).toBe(true);
    expect(Object.getPrototypeOf(prototype)).toBeNull();
  });

  it('equals a null-prototype object with the same entries', () => {
    const attributes = createAttributes();
    attributes.a = 1;
    const expected = Object.assign(Object.create(null), { a: 1 });
    expect(attributes).toEqual(expected);
    expect(attributes).toStrictEqual(expected);
  });
});
