/**
 * The simulator's only source of randomness: xoshiro128** seeded through splitmix32. Every id,
 * latency and routing choice is drawn from a `Prng`, so one seed reproduces a run bit for bit
 * (Math.random would make test failures unrepeatable).
 */
export class Prng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    // splitmix32 spreads a small integer seed over 128 bits of state; xoshiro misbehaves when
    // seeded with mostly-zero state.
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  uint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.uint32() / 4294967296;
  }

  /** Uniform in [min, max). */
  between(min: number, max: number): number {
    return min + (max - min) * this.float();
  }

  /** Uniform integer in [minInclusive, maxExclusive). */
  int(minInclusive: number, maxExclusive: number): number {
    return minInclusive + Math.floor(this.float() * (maxExclusive - minInclusive));
  }

  chance(probability: number): boolean {
    return probability > 0 && this.float() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('cannot pick from an empty list');
    return items[this.int(0, items.length)]!;
  }

  /** Standard normal (Box–Muller; the second value is discarded to keep the stream simple). */
  normal(): number {
    const u = 1 - this.float();
    const v = this.float();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /**
   * Log-normal with the given median and 99th percentile: the usual shape of service latency,
   * where a slow tail crosses a client timeout although the median is far below it.
   */
  logNormal(median: number, p99: number): number {
    const sigma = p99 > median ? Math.log(p99 / median) / Z_99 : 0;
    return median * Math.exp(sigma * this.normal());
  }

  /** Exponential with the given mean: gaps between independent arrivals. */
  exponential(mean: number): number {
    return -mean * Math.log(1 - this.float());
  }

  /** Lowercase hex of `chars` characters (a multiple of 8, at most 64), never all zeros (OTLP forbids zero ids). */
  hex(chars: number): string {
    // Hex-encoded by Buffer in one go: concatenating pieces would leave a tree of cons strings
    // behind every id, which the garbage collector then walks for every retained span.
    for (;;) {
      let any = 0;
      for (let i = 0; i < chars; i += 8) {
        const word = this.uint32();
        any |= word;
        HEX_SCRATCH.writeUInt32BE(word, i / 2);
      }
      if (any !== 0) return HEX_SCRATCH.toString('hex', 0, chars / 2);
    }
  }

  /** A random UUID v4 in canonical form. */
  uuid(): string {
    const h = this.hex(32);
    const variant = ((Number.parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }

  /** An independent stream, so that adding draws to one concern does not reshuffle another. */
  fork(): Prng {
    return new Prng(this.uint32());
  }
}

const Z_99 = 2.3263478740408408;
const HEX_SCRATCH = Buffer.alloc(32);

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
