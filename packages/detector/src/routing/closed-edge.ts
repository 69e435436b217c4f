import type { DetectorConfig } from '../config.ts';

/**
 * Routing inference's event-time clock: the end of the newest activity seen, and the closed edge
 * before which activity is final (see `RoutingInference`). The edge only moves forward: to the
 * newest activity less the allowed lateness as activity arrives, with the clock `advanceClock` is
 * given when the input goes quiet, and to the newest activity on `closeAll`.
 */
export class ClosedEdge {
  /** End of the newest bucket seen. */
  newestUnixMillis = Number.NEGATIVE_INFINITY;
  /** Activity before this is final (monotone). */
  closedUnixMillis = Number.NEGATIVE_INFINITY;
  /** The newest activity's end as `advanceClock` last saw it, and the clock when it first did. */
  private newestAsOf = { newestUnixMillis: Number.NEGATIVE_INFINITY, clockUnixMillis: 0 };

  constructor(private readonly allowedLatenessMillis: number) {}

  /** Activity up to `endUnixMillis` arrived. */
  saw(endUnixMillis: number): void {
    if (endUnixMillis > this.newestUnixMillis) this.newestUnixMillis = endUnixMillis;
  }

  /** Closes what the activity seen so far makes final: the newest, less the lateness. */
  closeBehindNewest(): void {
    this.close(this.newestUnixMillis - this.allowedLatenessMillis);
  }

  /**
   * Closes every second `allowedLatenessMillis` before `nowUnixMillis` that activity has arrived
   * up to, or that has passed since the newest activity arrived (the clock of the first call that
   * saw it; less the lateness if it arrived later than that). In a live service `now` is the wall
   * clock: while traffic flows the closed edge follows it, lateness behind; when traffic stops it
   * goes on with it, so an incident of the last duplicate before the silence settles; and while
   * spans older than the lateness are read (a backlog after a restart) it stays at the newest
   * activity read, through pauses shorter than the lateness, so what settles was judged on
   * activity that arrived, not on seconds still to be read.
   */
  advanceClock(nowUnixMillis: number): void {
    if (this.newestUnixMillis === Number.NEGATIVE_INFINITY) return;
    if (this.newestAsOf.newestUnixMillis !== this.newestUnixMillis)
      this.newestAsOf = { newestUnixMillis: this.newestUnixMillis, clockUnixMillis: nowUnixMillis };
    const lateness = this.allowedLatenessMillis;
    const quietMillis = Math.max(0, nowUnixMillis - this.newestAsOf.clockUnixMillis);
    // Activity that arrived later than the lateness is a backlog being read, which may pause
    // between batches: the clock moves past it only once it has been quiet for the lateness too.
    const late = this.newestAsOf.clockUnixMillis - this.newestUnixMillis > lateness;
    const pastNewest = late ? Math.max(0, quietMillis - lateness) : quietMillis;
    this.close(Math.min(this.newestUnixMillis + pastNewest, nowUnixMillis - lateness));
  }

  /** Closes everything seen: the input is complete. */
  closeAll(): void {
    this.close(this.newestUnixMillis);
  }

  /** Buckets below this index are closed and inferred from: none past the newest activity. */
  closedIndex(bucketMillis: number): number {
    return Math.floor(Math.min(this.closedUnixMillis, this.newestUnixMillis) / bucketMillis);
  }

  private close(untilUnixMillis: number): void {
    if (untilUnixMillis > this.closedUnixMillis) this.closedUnixMillis = untilUnixMillis;
  }
}

/**
 * How much closed activity after an event's start its inference needs: a finding whose repeat is
 * this far behind the closed edge has seen every event that could have broken its retry path.
 * A new event type adds the time it needs here.
 */
export function detectionHorizonMillis(config: DetectorConfig, bucketMillis: number): number {
  return (
    Math.max(config.silenceMinMillis, config.errorSpikeMinMillis, config.latencySpikeMinMillis) + bucketMillis
  );
}
