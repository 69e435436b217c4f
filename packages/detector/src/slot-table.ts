/**
 * A map from small non-negative integers to values, by open addressing in typed arrays with
 * linear probing and backward-shift deletion: one probe where a `Map` takes several, and no
 * rehashing churn for keys added and deleted at a high rate. Grows to hold twice its entries.
 */
export class SlotTable<V> {
  private keys = new Int32Array(1024).fill(-1);
  private values: (V | undefined)[] = new Array<V | undefined>(1024);
  private mask = 1023;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: number): V | undefined {
    const keys = this.keys;
    for (let at = hash(key) & this.mask; ; at = (at + 1) & this.mask) {
      const held = keys[at]!;
      if (held === key) return this.values[at];
      if (held === -1) return undefined;
    }
  }

  /** `key` must not be in the table. */
  add(key: number, value: V): void {
    if (2 * (this.count + 1) > this.keys.length) this.grow();
    const keys = this.keys;
    let at = hash(key) & this.mask;
    while (keys[at] !== -1) at = (at + 1) & this.mask;
    keys[at] = key;
    this.values[at] = value;
    this.count++;
  }

  delete(key: number): void {
    const keys = this.keys;
    const mask = this.mask;
    let at = hash(key) & mask;
    while (keys[at] !== key) {
      if (keys[at] === -1) return;
      at = (at + 1) & mask;
    }
    // Backward shift: move later entries of the probe run into the hole, so no tombstones remain.
    let hole = at;
    for (let next = (at + 1) & mask; keys[next] !== -1; next = (next + 1) & mask) {
      const home = hash(keys[next]!) & mask;
      if (((next - home) & mask) >= ((next - hole) & mask)) {
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

  private grow(): void {
    const keys = this.keys;
    const values = this.values;
    this.keys = new Int32Array(keys.length * 2).fill(-1);
    this.values = new Array<V | undefined>(keys.length * 2);
    this.mask = keys.length * 2 - 1;
    this.count = 0;
    for (let at = 0; at < keys.length; at++) if (keys[at] !== -1) this.add(keys[at]!, values[at]!);
  }
}

function hash(key: number): number {
  return Math.imul(key, 0x9e3779b1) >>> 16;
}
