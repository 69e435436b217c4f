const INITIAL_BITS = 10;

/**
 * A map from small non-negative integers to values, by open addressing in typed arrays with
 * linear probing and backward-shift deletion: one probe where a `Map` takes several, and no
 * rehashing churn for keys added and deleted at a high rate. Grows to hold twice its entries.
 *
 * A key's home is the top `bits` bits of its Fibonacci hash, as many bits as the table has slots
 * at every size, so that probe runs stay short however large it grows (`meanProbes` measures it).
 */
export class SlotTable<V> {
  private bits = INITIAL_BITS;
  private keys = new Int32Array(1 << INITIAL_BITS).fill(-1);
  private values: (V | undefined)[] = new Array<V | undefined>(1 << INITIAL_BITS);
  private mask = (1 << INITIAL_BITS) - 1;
  private shift = 32 - INITIAL_BITS;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: number): V | undefined {
    const keys = this.keys;
    for (let at = home(key, this.shift); ; at = (at + 1) & this.mask) {
      const held = keys[at]!;
      if (held === key) return this.values[at];
      if (held === -1) return undefined;
    }
  }

  /** `key` must not be in the table. */
  add(key: number, value: V): void {
    if (2 * (this.count + 1) > this.keys.length) this.grow();
    const keys = this.keys;
    let at = home(key, this.shift);
    while (keys[at] !== -1) at = (at + 1) & this.mask;
    keys[at] = key;
    this.values[at] = value;
    this.count++;
  }

  delete(key: number): void {
    const keys = this.keys;
    const mask = this.mask;
    let at = home(key, this.shift);
    while (keys[at] !== key) {
      if (keys[at] === -1) return;
      at = (at + 1) & mask;
    }
    // Backward shift: move later entries of the probe run into the hole, so no tombstones remain.
    let hole = at;
    for (let next = (at + 1) & mask; keys[next] !== -1; next = (next + 1) & mask) {
      const start = home(keys[next]!, this.shift);
      if (((next - start) & mask) >= ((next - hole) & mask)) {
        keys[hole] = keys[next]!;
        this.values[hole] = this.values[next];
        hole = next;
      }
    }
    keys[hole] = -1;
    this.values[hole] = undefined;
    this.count--;
  }

  clear(): void {
    this.keys.fill(-1);
    this.values.fill(undefined);
    this.count = 0;
  }

  /**
   * The mean number of slots a lookup of a present key reads: 1 when every key sits at its home.
   * Walks the whole table; for tests and measurements.
   */
  meanProbes(): number {
    if (this.count === 0) return 0;
    let total = 0;
    for (let at = 0; at < this.keys.length; at++) {
      const key = this.keys[at]!;
      if (key !== -1) total += ((at - home(key, this.shift)) & this.mask) + 1;
    }
    return total / this.count;
  }

  private grow(): void {
    const keys = this.keys;
    const values = this.values;
    this.bits++;
    this.keys = new Int32Array(1 << this.bits).fill(-1);
    this.values = new Array<V | undefined>(1 << this.bits);
    this.mask = (1 << this.bits) - 1;
    this.shift = 32 - this.bits;
    this.count = 0;
    for (let at = 0; at < keys.length; at++) if (keys[at] !== -1) this.add(keys[at]!, values[at]!);
  }
}

/** The top `32 - shift` bits of the key's Fibonacci hash. */
function home(key: number, shift: number): number {
  return Math.imul(key, 0x9e3779b1) >>> shift;
}
