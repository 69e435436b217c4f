import type { RoutingEvent } from './routing-event.ts';

/** Events a finder found, in the order of the buckets they are anchored at (ascending). */
export class FoundEvents {
  private anchors: number[] = [];
  private found: RoutingEvent[] = [];

  get events(): readonly RoutingEvent[] {
    return this.found;
  }

  /** Adds an event anchored after every one held. */
  push(anchor: number, event: RoutingEvent): void {
    this.anchors.push(anchor);
    this.found.push(event);
  }

  /** Drops the events anchored at `anchor` or later. */
  dropFrom(anchor: number): void {
    while (this.anchors.length > 0 && this.anchors[this.anchors.length - 1]! >= anchor) {
      this.anchors.pop();
      this.found.pop();
    }
  }

  /** Replaces the events anchored before `anchor` by `front`'s, all anchored before it too. */
  replaceBelow(anchor: number, front: FoundEvents): void {
    let below = 0;
    while (below < this.anchors.length && this.anchors[below]! < anchor) below++;
    this.anchors.splice(0, below, ...front.anchors);
    this.found.splice(0, below, ...front.found);
  }

  clear(): void {
    this.anchors.length = 0;
    this.found.length = 0;
  }
}
