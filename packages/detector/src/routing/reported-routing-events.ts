import type { RoutingEvent } from './routing-event.ts';
import type { ChangedWindows } from './routing-follow-up.ts';

/** A routing event as it was last reported: its signature, and where its window lay. */
interface ReportedEvent {
  readonly entry: string;
  readonly service: string;
  readonly startUnixMillis: number;
  readonly endUnixMillis: number;
}

/** What changed since the last report, when anything did. */
export interface RoutingChange {
  /** Services whose events are not those reported before. */
  readonly services: ReadonlySet<string>;
  /** Per service, the windows (before and after) of the events that appeared, moved or disappeared. */
  readonly windows: ChangedWindows;
}

/**
 * The routing events last reported (`DetectorChanges.routingEvents`), what each `tick` reports
 * changes against.
 *
 * Contract: `report` is given every event inferred now and the ids inference forgot past the retry
 * horizon. It adds to `reported` the events that are new or whose window or end changed, and to
 * `retracted` the ids of events no longer inferred — not those forgotten, which happened and stay
 * where a store keeps them — and returns which services and windows changed, or null when no
 * service's events did.
 */
export class ReportedRoutingEvents {
  /** By id. */
  #events = new Map<string, ReportedEvent>();
  /** Per service, the signatures of its events in the order inferred. */
  #serviceSignatures = new Map<string, string>();

  report(
    inferred: readonly RoutingEvent[],
    forgotten: readonly string[],
    reported: RoutingEvent[],
    retracted: string[],
  ): RoutingChange | null {
    const signatures = new Map<string, string>();
    const events = new Map<string, ReportedEvent>();
    const changedWindows = new Map<string, [number, number][]>();
    const windowChanged = (event: ReportedEvent) => {
      const windows = changedWindows.get(event.service);
      const window: [number, number] = [event.startUnixMillis, event.endUnixMillis];
      if (windows === undefined) changedWindows.set(event.service, [window]);
      else windows.push(window);
    };
    for (const event of inferred) {
      const entry = `${event.id}:${event.startUnixMillis}:${event.endUnixMillis}:${event.ended}`;
      const now = {
        entry,
        service: event.service,
        startUnixMillis: event.startUnixMillis,
        endUnixMillis: event.endUnixMillis,
      };
      events.set(event.id, now);
      signatures.set(event.service, (signatures.get(event.service) ?? '') + entry + ';');
      const before = this.#events.get(event.id);
      if (before?.entry === entry) continue;
      reported.push(event);
      windowChanged(now);
      if (before !== undefined) windowChanged(before);
    }
    const expired = new Set(forgotten);
    for (const [id, before] of this.#events) {
      if (events.has(id) || expired.has(id)) continue;
      retracted.push(id);
      windowChanged(before);
    }
    this.#events = events;
    const changedServices = new Set<string>();
    for (const service of new Set([...signatures.keys(), ...this.#serviceSignatures.keys()])) {
      if (signatures.get(service) !== this.#serviceSignatures.get(service)) changedServices.add(service);
    }
    this.#serviceSignatures = signatures;
    if (changedServices.size === 0) return null;
    return { services: changedServices, windows: changedWindows };
  }
}
