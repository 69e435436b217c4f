/*
 * Test support for what feeds the decoders hostile bytes: a seeded PRNG and byte mutations of
 * valid payloads. Used by this package's fuzz tests and by the service's hostile-payload tests
 * (`@keyscope/otlp/testing`).
 */

/** mulberry32: a tiny seeded PRNG, so every run mutates the same way and a failure reproduces. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Mutation = (input: Uint8Array, random: () => number, other: Uint8Array) => Uint8Array;
export const at = (random: () => number, length: number) => Math.floor(random() * Math.max(length, 1));

/** `input` with `deleted` bytes at `position` replaced by `inserted`, without per-byte spreads. */
export function splice(
  input: Uint8Array,
  position: number,
  deleted: number,
  inserted: ArrayLike<number>,
): Uint8Array {
  const end = Math.min(input.length, position + deleted);
  const out = new Uint8Array(position + inserted.length + input.length - end);
  out.set(input.subarray(0, position));
  out.set(inserted, position);
  out.set(input.subarray(end), position + inserted.length);
  return out;
}

/** Bit flips, random bytes, insertions, deletions, truncation, length prefixes, spliced slices. */
export const mutations: Mutation[] = [
  // Bit flip.
  (input, random) => {
    const out = input.slice();
    if (out.length > 0) out[at(random, out.length)]! ^= 1 << at(random, 8);
    return out;
  },
  // Random byte.
  (input, random) => {
    const out = input.slice();
    if (out.length > 0) out[at(random, out.length)] = at(random, 256);
    return out;
  },
  // Insert 1–4 random bytes.
  (input, random) =>
    splice(
      input,
      at(random, input.length + 1),
      0,
      Array.from({ length: 1 + at(random, 4) }, () => at(random, 256)),
    ),
  // Delete 1–8 bytes.
  (input, random) => splice(input, at(random, input.length), 1 + at(random, 8), []),
  // Truncate.
  (input, random) => input.slice(0, at(random, input.length)),
  // Corrupt what may be a length prefix: small, large and multi-byte varints.
  (input, random) => {
    const position = at(random, input.length);
    const choices = [
      [0],
      [0x7f],
      [0xff, 0x7f],
      [0xff, 0xff, 0xff, 0xff, 0x0f],
      [((input[position] ?? 0) + 1) & 0xff],
    ];
    return splice(input, position, 1, choices[at(random, choices.length)]!);
  },
  // Splice a slice of another payload in.
  (input, random, other) => {
    const from = at(random, other.length);
    return splice(
      input,
      at(random, input.length),
      at(random, 16),
      other.subarray(from, from + 1 + at(random, 64)),
    );
  },
  // Duplicate a slice in place (repeated fields, overlapping messages).
  (input, random) => {
    const from = at(random, input.length);
    return splice(input, from, 0, input.slice(from, from + 1 + at(random, 32)));
  },
];
