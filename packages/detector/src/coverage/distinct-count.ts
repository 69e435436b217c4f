/**
 * How many distinct names were added, estimated in a fixed 4 KiB whatever their number: a
 * HyperLogLog of 4096 registers (standard error about 1.6%, and exact in practice for a few
 * hundred names, where it counts the registers still empty). What the scope report says of the
 * tiers past `detector.maxTiers`, which it does not keep one by one.
 */
export class DistinctCount {
  private readonly registers = new Uint8Array(REGISTERS);

  add(name: string): void {
    const hash = hashOf(name);
    const register = hash >>> (32 - INDEX_BITS);
    // The rank of the first 1 bit among the remaining 20 bits (21 when they are all 0).
    const rest = (hash << INDEX_BITS) | (1 << (INDEX_BITS - 1));
    const rank = Math.clz32(rest) + 1;
    if (rank > this.registers[register]!) this.registers[register] = rank;
  }

  estimate(): number {
    let sum = 0;
    let zeros = 0;
    for (const value of this.registers) {
      sum += 2 ** -value;
      if (value === 0) zeros++;
    }
    const raw = (ALPHA * REGISTERS * REGISTERS) / sum;
    if (raw <= 2.5 * REGISTERS && zeros > 0) return Math.round(REGISTERS * Math.log(REGISTERS / zeros));
    return Math.round(raw);
  }

  /** Nothing was added. */
  get empty(): boolean {
    return this.registers.every((value) => value === 0);
  }

  /** The registers as base64, to persist; '' while nothing was added. */
  exportState(): string {
    return this.empty ? '' : Buffer.from(this.registers).toString('base64');
  }

  /** Adds what another count's `exportState` counted: the estimate is then of the union. */
  addState(state: string): void {
    if (state === '') return;
    const bytes = Buffer.from(state, 'base64');
    for (let i = 0; i < REGISTERS && i < bytes.length; i++)
      if (bytes[i]! > this.registers[i]!) this.registers[i] = bytes[i]!;
  }

  importState(state: string): void {
    this.registers.fill(0);
    this.addState(state);
  }
}

const INDEX_BITS = 12;
const REGISTERS = 1 << INDEX_BITS;
const ALPHA = 0.7213 / (1 + 1.079 / REGISTERS);

/** FNV-1a, then a murmur3 finaliser so that every bit depends on every character. */
function hashOf(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
