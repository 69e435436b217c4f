/** How a `TimerRing` buckets its items and whom it hands them back to. */
export interface TimerRingOptions<T> {
  bucketMillis: number;
  /** How far past the first bucket not final an item can be due and still go in the ring. */
  horizonMillis: number;
  /** An item is due this long after its time. */
  delayMillis: number;
  /** An item's time, read when it is placed (or placed again). */
  timeOf: (item: T) => number;
  /** Takes an item whose bucket `advance` made final; it may place it again. */
  onDue: (item: T) => void;
}

/**
 * Items due at an event time, in a ring of buckets of `bucketMillis`: an item waits in the bucket
 * of its time plus `delayMillis`, and is handed to `onDue` once `advance` makes that bucket final.
 * So the ring's work is per item placed, not per bucket passed, and an item comes back at most a
 * bucket after it is due. The ring holds the buckets from the first not final on, enough for
 * `horizonMillis`; an item due before them (overdue) waits for the next `advance`, and one due
 * beyond them (far: the watermark moved far at once) is placed again by it.
 */
export class TimerRing<T> {
  private readonly bucketMillis: number;
  private readonly delayMillis: number;
  private readonly timeOf: (item: T) => number;
  private readonly onDue: (item: T) => void;
  private readonly ringSize: number;
  private readonly slots: T[][];
  /** The bucket each ring slot holds; NaN when none. */
  private readonly slotBucket: Float64Array;
  /**
   * Buckets count from the first item's time, so that they stay small integers (a millisecond epoch
   * divided by a bucket is past the engine's small-integer range).
   */
  private origin = Number.NaN;
  /** Buckets below it are final; the ring holds buckets from it, `ringSize` of them. */
  private finalBelow = Number.NaN;
  /** The last final bucket as of the last `advance`. */
  private finalThrough = Number.NaN;
  private overdue: T[] = [];
  private far: T[] = [];
  private readonly due: T[] = [];

  constructor(options: TimerRingOptions<T>) {
    this.bucketMillis = options.bucketMillis;
    this.delayMillis = options.delayMillis;
    this.timeOf = options.timeOf;
    this.onDue = options.onDue;
    // The horizon, and a margin.
    this.ringSize = Math.ceil(options.horizonMillis / this.bucketMillis) + 3;
    this.slots = Array.from({ length: this.ringSize }, () => []);
    this.slotBucket = new Float64Array(this.ringSize).fill(Number.NaN);
  }

  /** Puts the item in the bucket where it is due: its time plus the delay. */
  place(item: T): void {
    const time = this.timeOf(item);
    if (Number.isNaN(this.origin)) {
      this.origin = time;
      this.finalBelow = 0;
    }
    const bucket = this.bucketOf(time + this.delayMillis);
    if (bucket < this.finalBelow) this.overdue.push(item);
    else if (bucket >= this.finalBelow + this.ringSize) this.far.push(item);
    else {
      // The ring holds buckets finalBelow.. finalBelow + ringSize - 1 only: a slot is empty or this bucket's.
      const slot = this.slotOf(bucket);
      this.slotBucket[slot] = bucket;
      this.slots[slot]!.push(item);
    }
  }

  /**
   * Makes final every bucket before the one that holds `finalBeforeUnixMillis`, and hands `onDue`
   * their items, then the overdue ones; then places the far ones again.
   */
  advance(finalBeforeUnixMillis: number): void {
    if (Number.isNaN(this.origin)) return;
    const limit = this.bucketOf(finalBeforeUnixMillis) - 1;
    this.finalThrough = limit;
    if (limit >= this.finalBelow) {
      const due = this.due;
      // Past 2^53 a bucket index no longer steps by one: visit the slots instead of the buckets.
      if (limit - this.finalBelow >= this.ringSize || !Number.isSafeInteger(limit)) {
        for (let slot = 0; slot < this.ringSize; slot++)
          if (this.slotBucket[slot]! <= limit) this.takeSlot(slot, due);
      } else {
        for (let bucket = this.finalBelow; bucket <= limit; bucket++) {
          const slot = this.slotOf(bucket);
          if (this.slotBucket[slot] === bucket) this.takeSlot(slot, due);
        }
      }
      this.finalBelow = limit + 1;
      for (let i = 0; i < due.length; i++) this.onDue(due[i]!);
      due.length = 0;
    }
    if (this.overdue.length > 0) {
      const overdue = this.overdue;
      this.overdue = [];
      for (const item of overdue) this.onDue(item);
    }
    if (this.far.length > 0) {
      const far = this.far;
      this.far = [];
      for (const item of far) this.place(item);
    }
  }

  /** Whether an item of this time is due by the last `advance`: its bucket is final. */
  isDue(unixMillis: number): boolean {
    return this.bucketOf(unixMillis + this.delayMillis) <= this.finalThrough;
  }

  /** Takes out the items due soonest: the overdue ones, else the oldest bucket's, else the far ones. */
  takeOldest(): T[] {
    let oldest = -1;
    for (let slot = 0; slot < this.ringSize; slot++) {
      if (this.slots[slot]!.length === 0) continue;
      if (oldest === -1 || this.slotBucket[slot]! < this.slotBucket[oldest]!) oldest = slot;
    }
    const items: T[] = [];
    if (this.overdue.length > 0) {
      items.push(...this.overdue);
      this.overdue = [];
    } else if (oldest !== -1) this.takeSlot(oldest, items);
    else {
      items.push(...this.far);
      this.far = [];
    }
    return items;
  }

  /** Takes out every item it holds, each once. */
  takeAll(): Set<T> {
    const items = new Set<T>([...this.overdue, ...this.far]);
    for (const slot of this.slots) for (const item of slot) items.add(item);
    for (let slot = 0; slot < this.ringSize; slot++) {
      this.slots[slot]!.length = 0;
      this.slotBucket[slot] = Number.NaN;
    }
    this.overdue = [];
    this.far = [];
    return items;
  }

  private bucketOf(unixMillis: number): number {
    return Math.floor((unixMillis - this.origin) / this.bucketMillis);
  }

  private slotOf(bucket: number): number {
    const slot = bucket % this.ringSize;
    return slot < 0 ? slot + this.ringSize : slot;
  }

  private takeSlot(slot: number, into: T[]): void {
    const items = this.slots[slot]!;
    for (let i = 0; i < items.length; i++) into.push(items[i]!);
    items.length = 0;
    this.slotBucket[slot] = Number.NaN;
  }
}
