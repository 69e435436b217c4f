import type { DetectorConfig } from '../config.ts';
import { ClosedEdge, detectionHorizonMillis } from './closed-edge.ts';
import { compareEvents, type RoutingEvent } from './routing-event.ts';

/** What an inference keeps of a service's events between questions. */
export interface InferredService {
  /** Counts of a bucket the events were inferred from changed (late activity, pruning). */
  dirty: boolean;
  events: RoutingEvent[];
  /** The closed index the events were inferred up to. */
  inferredClosedIndex: number;
}

/**
 * What routing inference answers, whatever it keeps of activity and however it infers: the clock
 * (closed-edge.ts), the events frozen as they were once their activity left the window, and each
 * service's events from its last inference, inferred again when its closed counts changed or the
 * closed edge moved. A subclass keeps the activity and infers one service's events (`infer`).
 */
export abstract class EventWindow<S extends InferredService> {
  protected readonly services = new Map<string, S>();
  protected readonly frozen = new Map<string, RoutingEvent>();
  /** The newest activity and the closed edge. */
  protected readonly edge: ClosedEdge;

  constructor(protected readonly config: DetectorConfig) {
    this.edge = new ClosedEdge(config.allowedLatenessMillis);
  }

  /** The size of a bucket, as the activity's samples give it. */
  protected abstract get bucketMillis(): number;

  /** The events of `service` in its buckets below `closedIndex`. */
  protected abstract infer(service: string, series: S, closedIndex: number): RoutingEvent[];

  /** Closes what the clock says is final (`ClosedEdge.advanceClock`). */
  advanceClock(nowUnixMillis: number): void {
    this.edge.advanceClock(nowUnixMillis);
  }

  /** Closes everything seen: the input is complete. */
  closeAll(): void {
    this.edge.closeAll();
  }

  /** Whether any activity of `service` has been seen. */
  knows(service: string): boolean {
    return this.services.has(service);
  }

  /** Activity before this time is final; past the newest activity, when the input was quiet. */
  closedUnixMillisNow(): number {
    return this.edge.closedUnixMillis;
  }

  /** How much closed activity after an event's start its inference needs (closed-edge.ts). */
  detectionHorizonMillis(): number {
    return detectionHorizonMillis(this.config, this.bucketMillis);
  }

  /**
   * Events of one service, for judging a key right now. Re-inferred only once the closed edge has
   * moved on by a silence's worth of buckets: a key judged on slightly older events is judged again
   * if they change, since `all()`, which `tick`/`flush` use to re-group findings, catches them.
   */
  eventsOf(service: string): readonly RoutingEvent[] {
    const series = this.services.get(service);
    const step = Math.max(1, Math.ceil(this.config.silenceMinMillis / this.bucketMillis));
    const stale = series !== undefined && this.closedIndex() - series.inferredClosedIndex >= step;
    const live = series === undefined ? [] : stale ? this.refresh(service, series) : series.events;
    if (this.frozen.size === 0) return live;
    const frozen = [...this.frozen.values()].filter((event) => event.service === service);
    return frozen.length === 0 ? live : [...frozen, ...live];
  }

  all(): RoutingEvent[] {
    const out = [...this.frozen.values()];
    for (const [name, series] of this.services)
      for (const event of this.refresh(name, series)) out.push(event);
    return out.sort(compareEvents);
  }

  /** Freezes, as they are now, the events of `service` that ended before `cutoffMillis`. */
  protected freezeEndedBefore(name: string, series: S, cutoffMillis: number): void {
    for (const event of this.refresh(name, series)) {
      if (event.ended && event.endUnixMillis < cutoffMillis) this.frozen.set(event.id, event);
    }
  }

  /** Buckets below this index are closed and inferred from: none past the newest activity. */
  protected closedIndex(): number {
    return this.edge.closedIndex(this.bucketMillis);
  }

  protected refresh(name: string, series: S): RoutingEvent[] {
    const closedIndex = this.closedIndex();
    if (series.dirty || closedIndex !== series.inferredClosedIndex) {
      series.events = this.infer(name, series, closedIndex).filter((event) => !this.frozen.has(event.id));
      series.dirty = false;
      series.inferredClosedIndex = closedIndex;
    }
    return series.events;
  }
}
