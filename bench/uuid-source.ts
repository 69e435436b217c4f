/**
 * Version 4 UUIDs from a seeded xorshift generator: fresh idempotency keys of the length the
 * simulator's have, the same for the same seed.
 */
export class UuidSource {
  #state: number;

  constructor(seed: number) {
    this.#state = Math.imul(seed + 1, 0x9e3779b1) | 1;
  }

  next(): string {
    const a = this.#word();
    const b = this.#word();
    const c = this.#word();
    const d = this.#word();
    return (
      `${hex(a, 8)}-${hex(b >>> 16, 4)}-4${hex(b & 0xfff, 3)}-` +
      `${hex(0x8000 | (c >>> 18), 4)}-${hex(c & 0xffff, 4)}${hex(d, 8)}`
    );
  }

  #word(): number {
    let x = this.#state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#state = x;
    return x >>> 0;
  }
}

function hex(value: number, digits: number): string {
  return value.toString(16).padStart(digits, '0').slice(-digits);
}
