/** Where routing inference counts the activity it reads: what inference costs (see `RoutingInference`). */
export interface InferenceWork {
  bucketReads: number;
}

/**
 * The buckets a node (or its whole service) was active in, ascending by index, with their span
 * and error counts and running sums of spans and of buckets that served any. Kept as activity
 * arrives rather than sorted per inference: a bucket after the newest (the usual case) is
 * appended, a late one inserted in place. A count that changes leaves the running sums stale
 * from its position on; they are brought up to date when next read, so a late bucket costs the
 * buckets after it once, not once per sample. Pruning drops a prefix without moving the rest.
 *
 * Positions are relative to the oldest bucket kept (0 is the oldest), as `indexAt` reads them.
 */
export class ActiveBuckets {
  private indexes: number[] = [];
  private spans: number[] = [];
  private errors: number[] = [];
  /**
   * `spansBefore[p]` is the spans of the buckets at positions below p (from an arbitrary base:
   * only differences are read), `servingBefore[p]` how many of them served any; one longer than
   * `indexes`, and valid up to `summedTo`.
   */
  private spansBefore: number[] = [0];
  private servingBefore: number[] = [0];
  private summedTo = 0;
  /** Positions in the arrays below this were pruned. */
  private head = 0;

  constructor(private readonly work: InferenceWork) {}

  get size(): number {
    return this.indexes.length - this.head;
  }

  indexAt(position: number): number {
    return this.indexes[this.head + position]!;
  }

  spansAt(position: number): number {
    return this.spans[this.head + position]!;
  }

  errorsAt(position: number): number {
    return this.errors[this.head + position]!;
  }

  /** The first position whose index is at least `index` (`size` if none). */
  lowerBound(index: number): number {
    let lo = this.head;
    let hi = this.indexes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.indexes[mid]! < index) lo = mid + 1;
      else hi = mid;
    }
    return lo - this.head;
  }

  /** The first position whose index is greater than `index` (`size` if none). */
  upperBound(index: number): number {
    let lo = this.head;
    let hi = this.indexes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.indexes[mid]! <= index) lo = mid + 1;
      else hi = mid;
    }
    return lo - this.head;
  }

  /** Counts `spans` and `errors` into bucket `index`, which becomes active if it was not. */
  add(index: number, spans: number, errors: number): void {
    const end = this.indexes.length;
    let at: number;
    if (end === this.head || this.indexes[end - 1]! < index) {
      at = end;
      this.indexes.push(index);
      this.spans.push(spans);
      this.errors.push(errors);
      this.spansBefore.push(0);
      this.servingBefore.push(0);
    } else {
      at = end - 1;
      if (this.indexes[at] !== index) at = this.head + this.lowerBound(index);
      if (this.indexes[at] === index) {
        this.spans[at]! += spans;
        this.errors[at]! += errors;
      } else {
        this.indexes.splice(at, 0, index);
        this.spans.splice(at, 0, spans);
        this.errors.splice(at, 0, errors);
        this.spansBefore.splice(at + 1, 0, 0);
        this.servingBefore.splice(at + 1, 0, 0);
      }
    }
    if (at < this.summedTo) this.summedTo = at;
  }

  /** Spans of the buckets at positions `from` (inclusive) to `to` (exclusive). */
  spansBetween(from: number, to: number): number {
    this.sumTo(this.head + to);
    return this.spansBefore[this.head + to]! - this.spansBefore[this.head + from]!;
  }

  /** How many buckets at positions `from` (inclusive) to `to` (exclusive) served any span. */
  servingBetween(from: number, to: number): number {
    this.sumTo(this.head + to);
    return this.servingBefore[this.head + to]! - this.servingBefore[this.head + from]!;
  }

  /** Brings the running sums up to date over the buckets below `index`. */
  sumBelow(index: number): void {
    this.sumTo(this.head + this.lowerBound(index));
  }

  /**
   * Drops the buckets below `index`, calling `onDrop` with each one's index, oldest first;
   * returns how many were dropped.
   */
  dropBelow(index: number, onDrop: (index: number) => void): number {
    const end = this.head + this.lowerBound(index);
    for (let at = this.head; at < end; at++) onDrop(this.indexes[at]!);
    const dropped = end - this.head;
    this.head = end;
    // The sums start from any base: a stale stretch before the new head is simply skipped.
    if (this.summedTo < this.head) {
      this.summedTo = this.head;
      this.spansBefore[this.head] = 0;
      this.servingBefore[this.head] = 0;
    }
    if (this.head >= 64 && 2 * this.head >= this.indexes.length) this.compact();
    return dropped;
  }

  private sumTo(end: number): void {
    for (let at = this.summedTo; at < end; at++) {
      const spans = this.spans[at]!;
      this.spansBefore[at + 1] = this.spansBefore[at]! + spans;
      this.servingBefore[at + 1] = this.servingBefore[at]! + (spans > 0 ? 1 : 0);
      this.work.bucketReads++;
    }
    if (end > this.summedTo) this.summedTo = end;
  }

  /** Moves the kept buckets to the front of the arrays, once at least half of them were pruned. */
  private compact(): void {
    const head = this.head;
    this.indexes = this.indexes.slice(head);
    this.spans = this.spans.slice(head);
    this.errors = this.errors.slice(head);
    // Rebased on the oldest kept bucket, so the sums stay as small as the window's.
    const spansBase = this.spansBefore[head]!;
    const servingBase = this.servingBefore[head]!;
    this.spansBefore = this.spansBefore.slice(head);
    this.servingBefore = this.servingBefore.slice(head);
    this.summedTo -= head;
    for (let at = 0; at <= this.summedTo; at++) {
      this.spansBefore[at]! -= spansBase;
      this.servingBefore[at]! -= servingBase;
    }
    this.head = 0;
  }
}
