import { describe, expect, it } from 'vitest';
import { CLOSE_BRACKET, COMMA, JsonBytes, OPEN_BRACKET } from '../src/json-bytes.ts';

/** Writes `values` as one JSON array through JsonBytes. */
function written(values: readonly (string | number)[], initialBytes?: number): Buffer {
  const out = new JsonBytes(initialBytes);
  out.punctuation(OPEN_BRACKET);
  values.forEach((value, i) => {
    if (i > 0) out.punctuation(COMMA);
    if (typeof value === 'string') out.string(value);
    else out.number(value);
  });
  out.punctuation(CLOSE_BRACKET);
  return Buffer.from(out.bytes());
}

describe('JSON written straight into bytes', () => {
  it('writes the bytes of JSON.stringify for every kind of string', () => {
    const strings = [
      '',
      'ord-0001363',
      '4bf92f3577b34da6a3ce929d0e0e4736',
      'say "hi"',
      'C:\\path',
      'tab\there, newline\n, nul\u0000, bell\u0007, del\u007f',
      'société, nœud, 東京',
      'k-🚀',
      'lone \ud800 high, lone \udfff low',
      '</script>',
      '\u2028\u2029',
    ];
    expect(written(strings).toString('utf8')).toBe(JSON.stringify(strings));
    expect(JSON.parse(written(strings).toString('utf8'))).toEqual(
      strings.map((s) => JSON.parse(JSON.stringify(s))),
    );
  });

  it('writes the bytes of JSON.stringify for every kind of number', () => {
    const numbers = [
      0,
      -0,
      7,
      10,
      201,
      2_147_483_647,
      2_147_483_648,
      1_748_854_813_912,
      1_748_854_813_912.986,
      -40,
      0.1,
      635.100830078125,
      1e21,
      5e-7,
      Number.MAX_SAFE_INTEGER,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      // Milliseconds to the microsecond, as timestamps and offsets between them are written.
      184.093,
      -26.197,
      0.211,
      0.001,
      -0.5,
      1.25,
      2_147_482.999,
      2_147_483.648,
      1_748_854_813_912.986,
      0.0001,
      1e-7,
    ];
    // And 2,000 more of them, spread over ±2,000,000 ms (a fixed sequence: the test is repeatable).
    let seed = 1;
    for (let i = 0; i < 2000; i++) {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      numbers.push((seed - 2 ** 31) / 1000);
    }
    expect(written(numbers).toString('utf8')).toBe(JSON.stringify(numbers));
  });

  it('grows past its first buffer and keeps what it wrote', () => {
    const long = Array.from({ length: 500 }, (_, i) => (i % 3 === 0 ? `clé-${i}-🚀` : `k-${i}`));
    const values = long.flatMap((text, i) => [text, i * 1.5]);
    expect(written(values, 16).toString('utf8')).toBe(JSON.stringify(values));
  });

  it('starts over after clear', () => {
    const out = new JsonBytes(16);
    out.string('first');
    out.clear();
    out.number(2);
    expect(out.bytes().toString('utf8')).toBe('2');
    expect(out.length).toBe(1);
  });
});
