/**
 * A min-heap of items by time, ties broken by insertion order so that equal times come out in the
 * order they went in (and runs stay deterministic).
 */
export class TimeQueue<T> {
  private readonly times: number[] = [];
  private readonly seqs: number[] = [];
  private readonly items: T[] = [];
  private nextSeq = 0;

  get size(): number {
    return this.items.length;
  }

  /** The earliest time, or Infinity when empty. */
  peekTime(): number {
    return this.items.length > 0 ? this.times[0]! : Number.POSITIVE_INFINITY;
  }

  push(time: number, item: T): void {
    this.times.push(time);
    this.seqs.push(this.nextSeq++);
    this.items.push(item);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const n = this.items.length;
    if (n === 0) return undefined;
    const top = this.items[0]!;
    this.swap(0, n - 1);
    this.times.pop();
    this.seqs.pop();
    this.items.pop();
    if (n > 1) this.down(0);
    return top;
  }

  private less(a: number, b: number): boolean {
    const ta = this.times[a]!;
    const tb = this.times[b]!;
    return ta < tb || (ta === tb && this.seqs[a]! < this.seqs[b]!);
  }

  private swap(a: number, b: number): void {
    const time = this.times[a]!;
    this.times[a] = this.times[b]!;
    this.times[b] = time;
    const seq = this.seqs[a]!;
    this.seqs[a] = this.seqs[b]!;
    this.seqs[b] = seq;
    const item = this.items[a]!;
    this.items[a] = this.items[b]!;
    this.items[b] = item;
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.items.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < n && this.less(left, smallest)) smallest = left;
      if (right < n && this.less(right, smallest)) smallest = right;
      if (smallest === i) return;
      this.swap(i, smallest);
      i = smallest;
    }
  }
}
