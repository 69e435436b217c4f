import { bucketsOf, type FinderScope, type NodeActivitySeries } from './activity-series.ts';
import { FoundEvents } from './found-events.ts';
import type { RoutingEvent } from './routing-event.ts';
import { errorSpikeEvent } from './routing-event-builders.ts';
import { dropRunsBelow, extendRuns, type Run, type RunCondition, reopenRuns, trimFirstRun } from './runs.ts';

/**
 * A node's error spikes (`error_spike`): runs of buckets with at least `errorSpikeMinSpans` spans
 * of which `errorSpikeRatio` or more failed, at least `errorSpikeMinMillis` long. A run resumed
 * within that length is the same spike: one healthy second inside an outage must not split it into
 * two events and two pages.
 *
 * Keeps its runs, short ones included (a run can still grow), so that `find` reads again only the
 * buckets from where activity changed (see `RoutingInference`); a new instance with `from` of -∞
 * reads the whole window.
 */
export class ErrorSpikeFinder {
  private readonly runs: Run[] = [];
  /** Error spikes, each at its run's first bucket. */
  private readonly spikes = new FoundEvents();
  private readonly spiking: RunCondition<Run>;

  constructor(
    private readonly scope: FinderScope,
    private readonly node: NodeActivitySeries,
  ) {
    const { buckets } = node;
    this.spiking = {
      holdsAt(position) {
        scope.bucketReads++;
        const spans = buckets.spansAt(position);
        const { errorSpikeMinSpans, errorSpikeRatio } = scope.config;
        return !(spans < errorSpikeMinSpans || buckets.errorsAt(position) / spans < errorSpikeRatio);
      },
      start: (index) => ({ first: index, last: index }),
      grow() {},
      cutBack() {},
    };
  }

  get events(): readonly RoutingEvent[] {
    return this.spikes.events;
  }

  /**
   * Finds the error spikes in the node's buckets below `closedIndex`. The runs found below index
   * `from` are kept; the one reaching across it is cut back to its buckets below and continued
   * from there.
   */
  find(from: number, closedIndex: number): void {
    const buckets = this.node.buckets;
    const runs = this.runs;
    const maxStep = this.minBuckets();
    const judgeFrom = reopenRuns(runs, buckets, from, maxStep, this.spiking);
    this.spikes.dropFrom(judgeFrom < runs.length ? runs[judgeFrom]!.first : from);
    const closedEnd = buckets.lowerBound(closedIndex);
    extendRuns(runs, buckets, buckets.lowerBound(from), closedEnd, maxStep, this.spiking);
    for (let r = judgeFrom; r < runs.length; r++) {
      const event = this.spikeOf(runs[r]!);
      if (event !== undefined) this.spikes.push(runs[r]!.first, event);
    }
  }

  /** After the node's buckets below `cutoff` were dropped: the run that began before it starts later. */
  findFrontAgain(cutoff: number): void {
    const runs = this.runs;
    dropRunsBelow(runs, cutoff);
    const spikes = new FoundEvents();
    if (trimFirstRun(runs, this.node.buckets, cutoff, this.spiking)) {
      const event = this.spikeOf(runs[0]!);
      if (event !== undefined) spikes.push(runs[0]!.first, event);
    }
    this.spikes.replaceBelow(cutoff, spikes);
  }

  private minBuckets(): number {
    return bucketsOf(this.scope, this.scope.config.errorSpikeMinMillis);
  }

  private spikeOf({ first, last }: Run): RoutingEvent | undefined {
    if (last - first + 1 < this.minBuckets()) return undefined;
    const bucketMillis = this.scope.bucketMillis;
    return errorSpikeEvent(
      this.node.placement,
      first * bucketMillis,
      (last + 1) * bucketMillis,
      this.scope.config.errorSpikeRatio,
    );
  }
}
