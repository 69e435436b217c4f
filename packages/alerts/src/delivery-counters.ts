/**
 * Outcomes counted per sink, a closed list (Prometheus label values):
 * - `delivered`: the sink accepted an outbox entry (2xx);
 * - `retried`: an attempt failed and the entry was rescheduled (a late request counts once it
 *   ends: delivered if the sink answered 2xx after all, retried if it failed or was aborted);
 * - `abandoned`: the sink refused the entry for good, or it could not be sent at all (its sink was
 *   removed from the config, its trigger was never delivered, its incident was retracted first);
 * - `deferred`: not sent yet: a resolve whose trigger to the same sink is still pending, or an
 *   entry for a sink that already has `concurrency` late requests open;
 * - `refreshed` / `refresh_failed`: Alertmanager re-sends of open incidents (best effort, per alert).
 */
export const DELIVERY_OUTCOMES = [
  'delivered',
  'retried',
  'abandoned',
  'deferred',
  'refreshed',
  'refresh_failed',
] as const;

export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/** Sink name → outcome → count since the alerter was created. */
export type DeliveryCountersSnapshot = Record<string, Record<DeliveryOutcome, number>>;

export class DeliveryCounters {
  private readonly counts = new Map<string, Record<DeliveryOutcome, number>>();

  /** Every configured sink starts at zero, so its series exist before the first delivery. */
  constructor(sinkNames: readonly string[]) {
    for (const name of sinkNames) this.row(name);
  }

  add(sink: string, outcome: DeliveryOutcome, count = 1): void {
    this.row(sink)[outcome] += count;
  }

  snapshot(): DeliveryCountersSnapshot {
    const out: DeliveryCountersSnapshot = {};
    for (const [sink, row] of this.counts) out[sink] = { ...row };
    return out;
  }

  private row(sink: string): Record<DeliveryOutcome, number> {
    let row = this.counts.get(sink);
    if (row === undefined) {
      row = Object.fromEntries(DELIVERY_OUTCOMES.map((outcome) => [outcome, 0])) as Record<
        DeliveryOutcome,
        number
      >;
      this.counts.set(sink, row);
    }
    return row;
  }
}
