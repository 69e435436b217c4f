import { type KeyNamespace, partitionKey } from '@keyscope/attempts';
import {
  createDetector,
  type Detector,
  type DetectorConfig,
  DistinctCount,
  type Finding,
  type Incident,
  type RoutingEvent,
  type ScopeReportState,
} from '@keyscope/detector';
import type { KeyscopeStore } from '@keyscope/store';
import type { IncidentListener } from '../pipeline/detection-pipeline.ts';
import type { ReplayHeaderLog } from '../pipeline/replay-header-log.ts';
import { mergeIncidentParts } from './incident-merge.ts';
import type { IncidentRecord } from './incident-records.ts';

const OFFSETS = 'kafka-incidents-offsets';
const SCOPE_PARTS = 'kafka-scope-parts';

/**
 * The serve role's copy of the incidents topic, in the same SQLite tables the embedded service
 * writes, so the API, the web page and the alerter work unchanged:
 *
 * - finding records become findings, and their attempts go to the attempts table, so that the key
 *   lookup answers from the evidence of every key that has a finding (keys without one are only
 *   in the detectors' partition files);
 * - incident parts are kept per (incident, partition) in the store's `incidentParts` and merged
 *   into the incident the API serves and the alerter pages for;
 * - routing events go to the routing events table, one row per event id whichever attempts
 *   partition's detector wrote it (each infers the same events from the same activity), and a
 *   tombstone deletes the row;
 * - scope report parts are summed into the report;
 * - a partition's list of incident ids (written when a detector takes it over) drops the parts
 *   of that partition it does not hold, among those opened within the window it covers.
 *
 * A batch and the offset it reaches are written in one transaction: after a crash the serve role
 * continues from its own offsets (kept with the data, not in a consumer group).
 */
export class IncidentsMaterializer {
  readonly #store: KeyscopeStore;
  readonly #keyNamespace: KeyNamespace;
  readonly #maxStoresPerIncident: number;
  readonly #alerts: () => IncidentListener | undefined;
  readonly #scopeView: Detector;
  #offsets: Map<string, number>;
  #scopeParts: Map<number, ScopeReportState>;
  readonly #replayHeaderLog: ReplayHeaderLog | undefined;

  constructor(options: {
    store: KeyscopeStore;
    detectorConfig: DetectorConfig;
    /** Read at each batch: the alerter starts after the materializer. */
    alerts: () => IncidentListener | undefined;
    /** Told the summed tiers as they change; none: nothing is logged. */
    replayHeaderLog?: ReplayHeaderLog;
  }) {
    this.#store = options.store;
    this.#keyNamespace = options.detectorConfig.keyNamespace;
    this.#maxStoresPerIncident = options.detectorConfig.maxStoresPerIncident;
    this.#alerts = options.alerts;
    this.#replayHeaderLog = options.replayHeaderLog;
    this.#offsets = new Map(Object.entries(this.#store.state.load<Record<string, number>>(OFFSETS) ?? {}));
    this.#scopeParts = new Map(
      Object.entries(this.#store.state.load<Record<string, ScopeReportState>>(SCOPE_PARTS) ?? {}).map(
        ([partition, state]) => [Number(partition), state],
      ),
    );
    // A detector that only ever holds the summed scope counts: the API's scope report reads it.
    this.#scopeView = createDetector(options.detectorConfig);
    this.#scopeView.restore({ findings: [], scopeState: sumScopeStates([...this.#scopeParts.values()]) });
  }

  /** The detector whose `scopeReport()` the API serves. */
  get scopeView(): Detector {
    return this.#scopeView;
  }

  /** The next offset to read of a partition of the incidents topic; undefined when never read. */
  nextOffset(topic: string, partition: number): number | undefined {
    return this.#offsets.get(`${topic}/${partition}`);
  }

  /** Applies one batch of one partition, up to and including `lastOffset`, in one transaction. */
  apply(topic: string, partition: number, records: readonly IncidentRecord[], lastOffset: number): void {
    const store = this.#store;
    const findings = new Map<string, Finding | null>();
    const routingEvents = new Map<string, RoutingEvent | null>();
    const touchedIncidents = new Set<string>();
    let scopeChanged = false;
    // Copies, adopted once the transaction commits: a failed one leaves memory as the database.
    const scopeParts = new Map(this.#scopeParts);
    const offsets = new Map(this.#offsets);
    store.transaction(() => {
      for (const record of records) {
        switch (record.type) {
          case 'finding':
            findings.set(record.id, record.finding);
            break;
          case 'routing-event':
            routingEvents.set(record.id, record.routingEvent);
            break;
          case 'incident':
            if (record.incident === null) store.incidentParts.delete(record.id, record.partition);
            else store.incidentParts.put(record.id, record.partition, record.incident);
            touchedIncidents.add(record.id);
            break;
          case 'scope':
            if (record.scope === null) scopeParts.delete(record.partition);
            else scopeParts.set(record.partition, record.scope);
            scopeChanged = true;
            break;
          case 'parts': {
            // The partition's new owner holds parts of these incidents only, of those it can judge
            // (incident-records.ts).
            const held = new Set(record.incidentIds);
            for (const { incidentId, part } of store.incidentParts.heldBy(record.partition)) {
              if (held.has(incidentId) || part.openedUnixMillis < record.sinceUnixMillis) continue;
              store.incidentParts.delete(incidentId, record.partition);
              touchedIncidents.add(incidentId);
            }
            break;
          }
        }
      }
      const incidents: Incident[] = [];
      const retractedIncidentIds: string[] = [];
      for (const id of touchedIncidents) {
        const parts = store.incidentParts.of(id);
        if (parts.length === 0) retractedIncidentIds.push(id);
        else incidents.push(mergeIncidentParts(parts, this.#maxStoresPerIncident));
      }
      const upserts = [...findings.values()].filter((finding): finding is Finding => finding !== null);
      for (const finding of upserts) {
        for (const attempt of finding.attempts) {
          store.attemptLog.append(partitionKey(attempt, { keyNamespace: this.#keyNamespace }), attempt);
        }
      }
      const alerts = this.#alerts();
      alerts?.incidentsRetracted(retractedIncidentIds);
      store.applyChanges({
        findings: upserts,
        retractedFindingIds: [...findings].filter(([, finding]) => finding === null).map(([id]) => id),
        incidents,
        retractedIncidentIds,
        routingEvents: [...routingEvents.values()].filter((event): event is RoutingEvent => event !== null),
        retractedRoutingEventIds: [...routingEvents].filter(([, event]) => event === null).map(([id]) => id),
      });
      alerts?.incidentsChanged(incidents);
      if (scopeChanged) store.state.save(SCOPE_PARTS, Object.fromEntries(scopeParts));
      offsets.set(`${topic}/${partition}`, lastOffset + 1);
      store.state.save(OFFSETS, Object.fromEntries(offsets));
    });
    this.#offsets = offsets;
    this.#scopeParts = scopeParts;
    if (scopeChanged) {
      const summed = sumScopeStates([...this.#scopeParts.values()]);
      this.#scopeView.restore({ findings: [], scopeState: summed });
      this.#replayHeaderLog?.note(summed);
    }
  }
}

/** Each key hashes to one partition, so the partitions' scope counts add up per tier. */
export function sumScopeStates(states: readonly ScopeReportState[]): ScopeReportState {
  const tiers = new Map<string, ScopeReportState[number]>();
  for (const state of states) {
    for (const row of state) {
      const sum = tiers.get(row.tier);
      if (sum === undefined) {
        const sum = { ...row, declared: { ...row.declared }, spread: [...row.spread] };
        if (row.coverage !== undefined) sum.coverage = [...row.coverage];
        tiers.set(row.tier, sum);
        continue;
      }
      sum.keys += row.keys;
      if (row.endpoints !== undefined)
        sum.endpoints = [...new Set([...(sum.endpoints ?? []), ...row.endpoints])].sort();
      for (const [level, count] of Object.entries(row.declared) as [keyof typeof row.declared, number][]) {
        sum.declared[level] = (sum.declared[level] ?? 0) + count;
      }
      row.spread.forEach((count, level) => {
        sum.spread[level] = (sum.spread[level] ?? 0) + count;
      });
      // The overflow bucket's distinct tiers: the union of the partitions' counts.
      if (row.distinct !== undefined && row.distinct !== '') {
        const distinct = new DistinctCount();
        distinct.importState(sum.distinct ?? '');
        distinct.addState(row.distinct);
        sum.distinct = distinct.exportState();
      }
      if (row.coverage === undefined) continue;
      const coverage = (sum.coverage ??= []);
      row.coverage.forEach((count, index) => {
        coverage[index] = (coverage[index] ?? 0) + count;
      });
    }
  }
  return [...tiers.values()].sort((a, b) => (a.tier < b.tier ? -1 : a.tier > b.tier ? 1 : 0));
}
