import { rmSync } from 'node:fs';
import type { Attempt, NodeActivity } from '@keyscope/attempts';
import type { Detector, DetectorChanges, DetectorConfig, TickOptions } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { ACTIVITY_RESTORE_MILLIS, restoreDetector, saveScopeState } from '../pipeline/stored-detector.ts';
import type { AttemptsRecord } from './attempt-records.ts';
import { type IncidentRecord, recordsOfChanges, recordsOfTakeover } from './incident-records.ts';

const APPLIED = 'kafka-applied';
const OUTBOX = 'kafka-outbox';
const SOURCES = 'kafka-activity-sources';
const TAKEOVER_MARGIN_MILLIS = 10 * 60_000;
const INVALID_NONE = Object.freeze({ outcome: 0, hit: 0, scope: 0 });

interface Applied {
  offset: number;
  atUnixMillis: number;
}

interface SourceMark {
  offset: number;
  atUnixMillis: number;
}

export interface PartitionDetectorOptions {
  /** The partition's own SQLite file. */
  readonly path: string;
  readonly partition: number;
  readonly detectorConfig: DetectorConfig;
  readonly retentionMillis: number;
  readonly now: () => number;
}

/**
 * One attempts partition's detector and its durable state: the AttemptLog and findings of the
 * keys that hash to it, a copy of all node activity, the scope report counts, the last applied
 * offset, and an outbox of incident records not yet acknowledged by Kafka.
 *
 * Every change happens in one SQLite transaction together with the offset it covers and the
 * records that publish it, so after a crash the state, the offset and what remains to be sent
 * agree: records at or below the applied offset are skipped when Kafka delivers them again, and
 * the outbox is sent before anything new.
 */
export class PartitionDetector {
  readonly partition: number;
  readonly #options: PartitionDetectorOptions;
  readonly #store: KeyscopeStore;
  #detector: Detector;
  #applied: Applied;
  #sources: Map<string, SourceMark>;
  #outbox: IncidentRecord[];
  #publishedScope = '';

  constructor(options: PartitionDetectorOptions) {
    this.#options = options;
    this.partition = options.partition;
    // One checkpoint thread serves every partition's file (background-checkpoints.ts), so a
    // commit never stalls while the WAL is copied into the database.
    this.#store = new KeyscopeStore({ path: options.path, backgroundCheckpoints: true });
    this.#applied = { offset: -1, atUnixMillis: 0 };
    this.#sources = new Map();
    this.#outbox = [];
    this.#detector = this.#restore();
  }

  /** Removes a partition's state file (and SQLite's companions), for a rebuild from scratch. */
  static remove(path: string): void {
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  }

  /** The last offset whose effect is in the state; -1 for a state built from nothing. */
  /** Whether the partition's WAL is checkpointed off the event loop. */
  get checkpointsInBackground(): boolean {
    return this.#store.checkpointsInBackground;
  }

  get appliedOffset(): number {
    return this.#applied.offset;
  }

  /** Wall-clock time of the last applied batch; 0 for a state built from nothing. */
  get appliedUnixMillis(): number {
    return this.#applied.atUnixMillis;
  }

  get detector(): Detector {
    return this.#detector;
  }

  /** Records committed to the state but not yet acknowledged by Kafka, oldest first. */
  pending(): readonly IncidentRecord[] {
    return this.#outbox;
  }

  /**
   * Applies decoded records of offsets above `appliedOffset`, up to `lastOffset` (records in
   * between that were unreadable or too old are simply covered), in one transaction. Returns the
   * number of attempts applied.
   */
  apply(records: readonly { offset: number; record: AttemptsRecord }[], lastOffset: number): number {
    if (lastOffset <= this.#applied.offset) return 0;
    const attempts: Attempt[] = [];
    const activity: NodeActivity[] = [];
    const sources = new Map(this.#sources);
    const now = this.#options.now();
    for (const { offset, record } of records) {
      if (offset <= this.#applied.offset) continue;
      if (record.type === 'attempt') {
        attempts.push(record.attempt);
        continue;
      }
      for (const entry of record.entries) {
        if (entry.source !== '') {
          // An ingest instance that re-reads a traces message after a crash writes its activity
          // again with the same source offset; counts add up, so the copy must not count twice.
          const mark = sources.get(entry.source);
          if (mark !== undefined && entry.offset <= mark.offset) continue;
          sources.set(entry.source, { offset: entry.offset, atUnixMillis: now });
        }
        for (const sample of entry.samples) activity.push(sample);
      }
    }
    this.#commit((detector, store) => {
      const changes = detector.ingest({
        attempts,
        activity,
        invalid: { ...INVALID_NONE },
      });
      store.recordActivity(activity);
      saveScopeState(store, detector);
      store.state.save(SOURCES, Object.fromEntries(sources));
      this.#sources = sources;
      this.#applied = { offset: lastOffset, atUnixMillis: now };
      store.state.save(APPLIED, this.#applied);
      return changes;
    });
    return attempts.length;
  }

  /**
   * Regroups, resolves quiet incidents, expires state; publishes the scope counts when they moved.
   * With `maxRegroupedKeys`, the keys past it that a changed routing event judges again wait for
   * `judgeRegrouped` (see TickOptions).
   */
  tick(nowUnixMillis: number, options: TickOptions = {}): void {
    const cutoff = nowUnixMillis - ACTIVITY_RESTORE_MILLIS;
    let sourcesChanged = false;
    for (const [source, mark] of this.#sources) {
      if (mark.atUnixMillis < cutoff) {
        this.#sources.delete(source);
        sourcesChanged = true;
      }
    }
    const scope = this.#detector.scopeState();
    const scopeText = JSON.stringify(scope);
    const extra: IncidentRecord[] =
      scopeText === this.#publishedScope ? [] : [{ type: 'scope', partition: this.partition, scope }];
    const changes = this.#detector.tick(nowUnixMillis, options);
    if (!sourcesChanged && extra.length === 0 && isEmpty(changes)) return;
    this.#commit((_detector, store) => {
      if (sourcesChanged) store.state.save(SOURCES, Object.fromEntries(this.#sources));
      return changes;
    }, extra);
    this.#publishedScope = scopeText;
  }

  /**
   * Judges up to `maxKeys` of the keys a tick left waiting, in a transaction of their own that
   * publishes what they changed, and says whether more wait.
   */
  judgeRegrouped(maxKeys: number): boolean {
    if (this.#detector.regroupedKeys() === 0) return false;
    this.#commit((detector) => detector.judgeRegrouped(maxKeys));
    return this.#detector.regroupedKeys() > 0;
  }

  /**
   * Publishes, after taking the partition over and catching up, every incident part the state
   * holds and the list of their ids, so the serve role drops parts a previous owner left behind.
   */
  publishTakeover(): void {
    // What the state covers: one retry horizon back from now (a rebuild skips older records), less
    // a margin for event times ahead of the records' timestamps.
    const since =
      this.#options.now() - this.#options.detectorConfig.retryHorizonMillis + TAKEOVER_MARGIN_MILLIS;
    const none: DetectorChanges = {
      findings: [],
      retractedFindingIds: [],
      incidents: [],
      retractedIncidentIds: [],
    };
    this.#commit(() => none, recordsOfTakeover(this.#detector.incidents(), this.partition, since));
  }

  /** The outbox reached Kafka. */
  delivered(count: number): void {
    const rest = this.#outbox.slice(count);
    this.#store.transaction(() => this.#store.state.save(OUTBOX, rest));
    this.#outbox = rest;
  }

  purge(nowUnixMillis: number): void {
    this.#store.purge({
      attemptsBeforeUnixMillis: nowUnixMillis - this.#options.detectorConfig.retryHorizonMillis,
      recordsBeforeUnixMillis: nowUnixMillis - this.#options.retentionMillis,
      maxRows: 5_000,
    });
  }

  close(): void {
    this.#store.close();
  }

  /**
   * Runs the detector's work, stores its changes and appends their records to the outbox, all in
   * one transaction. If the transaction fails, the detector (whose memory ran ahead) is rebuilt
   * from the store and the error is thrown for the caller to retry.
   */
  #commit(
    work: (detector: Detector, store: KeyscopeStore) => DetectorChanges,
    extra: readonly IncidentRecord[] = [],
  ): void {
    const store = this.#store;
    try {
      store.transaction(() => {
        const changes = work(this.#detector, store);
        store.applyChanges(changes);
        const records = [...recordsOfChanges(changes, this.partition), ...extra];
        if (records.length === 0) return;
        const outbox = [...this.#outbox, ...records];
        store.state.save(OUTBOX, outbox);
        this.#outbox = outbox;
      });
    } catch (error) {
      this.#detector = this.#restore();
      throw error;
    }
  }

  #restore(): Detector {
    const { detectorConfig } = this.#options;
    const store = this.#store;
    this.#applied = store.state.load<Applied>(APPLIED) ?? { offset: -1, atUnixMillis: 0 };
    this.#sources = new Map(Object.entries(store.state.load<Record<string, SourceMark>>(SOURCES) ?? {}));
    this.#outbox = store.state.load<IncidentRecord[]>(OUTBOX) ?? [];
    return restoreDetector(store, detectorConfig);
  }
}

function isEmpty(changes: DetectorChanges): boolean {
  return (
    changes.findings.length === 0 &&
    changes.retractedFindingIds.length === 0 &&
    changes.incidents.length === 0 &&
    changes.retractedIncidentIds.length === 0 &&
    (changes.routingEvents ?? []).length === 0 &&
    (changes.retractedRoutingEventIds ?? []).length === 0
  );
}
