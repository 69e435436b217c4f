import {
  type CheckedAttempts,
  extractAttempts,
  type Mapping,
  mappingDecodeOptions,
  SendLinker,
  type SendLinkerCounts,
  type SpanLimits,
} from '@keyscope/attempts';
import {
  type Detector,
  type DetectorChanges,
  type DetectorConfig,
  FINDING_CLASSES,
  type FindingClass,
  type Incident,
  type ScopeReportState,
  type TickOptions,
} from '@keyscope/detector';
import type { ConsumeResult, DecodeOptions, Span, SpanConsumer } from '@keyscope/otlp';
import type { KeyscopeStore } from '@keyscope/store';
import { trace } from '@opentelemetry/api';
import type { SpansConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { ReplayHeaderLog } from './replay-header-log.ts';
import { consumeResultOf, spanLimitsAt } from './span-window.ts';
import { restoreDetector, saveScopeState } from './stored-detector.ts';

const tracer = trace.getTracer('keyscope');

/** What the pipeline tells the alerter, inside the transaction that stores the incidents. */
export interface IncidentListener {
  incidentsChanged(incidents: readonly Incident[]): number;
  incidentsRetracted(incidentIds: readonly string[]): number;
}

export interface DetectionPipelineOptions {
  mapping: Mapping;
  detectorConfig: DetectorConfig;
  store: KeyscopeStore;
  alerts?: IncidentListener;
  logger: Logger;
  /** The service clock: ticks, and the spans' time window. Date.now by default. */
  now?: () => number;
  /** The time window and size limits spans are held to (`spans.*` of the service's config). */
  spans: SpansConfig;
}

export interface PipelineCounts {
  /**
   * Spans handed to `consumeSpans`. Decoded with `decodeOptions`, that leaves out the spans the
   * pipeline never reads (no key, neither SERVER nor a failed CLIENT): the receivers' counters
   * count every span.
   */
  spans: number;
  /**
   * Attempts extracted, by kind, redelivered ones included (they are counted in duplicateSpans);
   * `client` counts the keyless sends linked to their key (`sendLinks.linked`) too.
   */
  attempts: { server: number; arrival: number; client: number; effect: number };
  /** Keyless sends linked to the key of their server spans, and the linker's dropped entries. */
  sendLinks: SendLinkerCounts;
  /** Attempts the attempt log already held (a span delivered again), ignored by the detector. */
  duplicateSpans: number;
  invalidValues: Record<string, number>;
  /** Spans refused under the limits, by code (also counted by the receivers, per transport). */
  refusedSpans: Record<string, number>;
  /** Operations, targets and errors cut to their limit, on spans that were kept. */
  truncatedValues: number;
  /** Findings reported (new or updated), by class. */
  findings: Record<FindingClass, number>;
  /** Seconds spent in store transactions, for the write-latency histogram. */
  storeWriteSeconds: number[];
}

/**
 * The embedded pipeline behind the receivers: spans → attempts → detector → SQLite (and the
 * alert outbox), one transaction per OTLP request. `consumeSpans` resolves only after that
 * transaction committed, so a sender's 200 means its spans' effect survives a kill -9. If the
 * transaction fails, the detector is rebuilt from the store (its memory ran ahead of what was
 * committed) and the receiver answers with a retryable error, so the sender sends again.
 */
export class DetectionPipeline implements SpanConsumer {
  readonly decodeOptions: DecodeOptions;
  #detector: Detector;
  readonly #options: DetectionPipelineOptions;
  readonly #pending: {
    extracted: CheckedAttempts;
    resolve: (result: ConsumeResult) => void;
    reject: (error: unknown) => void;
  }[] = [];
  readonly #counts: PipelineCounts = {
    spans: 0,
    attempts: { server: 0, arrival: 0, client: 0, effect: 0 },
    sendLinks: { linked: 0, evicted: 0, expired: 0, sends: 0, keys: 0 },
    duplicateSpans: 0,
    invalidValues: {},
    refusedSpans: {},
    truncatedValues: 0,
    findings: Object.fromEntries(FINDING_CLASSES.map((c) => [c, 0])) as Record<FindingClass, number>,
    storeWriteSeconds: [],
  };

  readonly #spans: SpansConfig;
  /**
   * Keyless sends meet their server spans across payloads (different services export apart).
   * Its state is not the detector's: a transaction that fails leaves it as it is, and the
   * payload sent again links again (see SendLinker).
   */
  readonly #sendLinker = new SendLinker();
  readonly #replayHeaderLog: ReplayHeaderLog;

  constructor(options: DetectionPipelineOptions) {
    this.#options = options;
    this.#spans = options.spans;
    this.#replayHeaderLog = new ReplayHeaderLog(
      options.logger,
      options.detectorConfig.replayHeaderMinRepeats,
    );
    // The decoder materializes only what the mapping reads: most spans carry no key and must
    // cost almost nothing, and those that are neither SERVER spans nor failed sends are not
    // even returned.
    this.decodeOptions = mappingDecodeOptions(options.mapping);
    this.#detector = this.#restoredDetector();
  }

  get detector(): Detector {
    return this.#detector;
  }

  /**
   * Extracts the payload's attempts, then waits for the next group commit: every payload that
   * arrived in the same turn of the event loop (concurrent senders) is judged and committed in
   * one SQLite transaction, and all of them are acknowledged after it — a commit costs about a
   * millisecond, so sharing it is most of the throughput under load, and nothing is acknowledged
   * before it is durable. The group goes to the detector as one batch: a key whose attempts came
   * in several of its payloads (a trace's services export apart) is judged once, and a node's
   * activity in one second is one sample, not one per payload; each payload is checked for
   * redelivery on its own, so a retry committed with new payloads does not count its activity twice.
   *
   * Spans outside the time window or over the size limits (`spans`, see SpansConfig) are refused
   * during extraction and resolved as rejected, by code, once the rest is committed.
   */
  consumeSpans(spans: Span[]): Promise<ConsumeResult> {
    // A no-op unless self-telemetry started the SDK (telemetry.otlpEndpoint).
    return tracer.startActiveSpan('keyscope.consume', (span) => {
      // A redelivered span gives its attempt again: the store's attempt log refuses it exactly
      // (see AttemptTable) and the detector counts it (#commitPending).
      const extracted = extractAttempts(spans, this.#options.mapping, this.#limits());
      this.#sendLinker.linkInto(extracted);
      this.#count(spans.length, extracted);
      span.setAttribute('keyscope.spans', spans.length);
      span.setAttribute('keyscope.attempts', extracted.attempts.length);
      return new Promise<ConsumeResult>((resolve, reject) => {
        this.#pending.push({ extracted, resolve, reject });
        if (this.#pending.length === 1) setImmediate(() => this.#commitPending());
      }).finally(() => span.end());
    });
  }

  #commitPending(): void {
    const group = this.#pending.splice(0);
    const { store } = this.#options;
    // Redelivered spans are the attempts the attempt log refuses (see consumeSpans).
    const duplicatesBefore = this.#detector.stats().duplicateAttempts;
    let saved: ScopeReportState = [];
    try {
      this.#commit((detector, apply) => {
        const changes = detector.ingest(group.map(({ extracted }) => extracted));
        apply(changes);
        // Without the activity of payloads delivered again, which the detector did not count.
        store.recordActivity(changes.activity ?? []);
        // Persisted with the attempts, so a restart forgets neither an ongoing failover nor the
        // scope report.
        saved = saveScopeState(store, detector);
      });
    } catch (error) {
      for (const { reject } of group) reject(error);
      return;
    }
    this.#replayHeaderLog.note(saved);
    this.#counts.duplicateSpans += this.#detector.stats().duplicateAttempts - duplicatesBefore;
    for (const { extracted, resolve } of group) resolve(consumeResultOf(extracted.refusals));
  }

  /** The limits for spans arriving now: the window moves with the service clock. */
  #limits(): SpanLimits {
    const now = (this.#options.now ?? Date.now)();
    return spanLimitsAt(now, this.#options.detectorConfig.retryHorizonMillis, this.#spans);
  }

  /**
   * Re-groups, resolves quiet incidents, forgets expired state; called on a timer. With
   * `maxRegroupedKeys`, the keys past it that a changed routing event judges again wait for
   * `judgeRegrouped` (see TickOptions).
   */
  tick(nowUnixMillis = (this.#options.now ?? Date.now)(), options: TickOptions = {}): void {
    this.#commit((detector, apply) => apply(detector.tick(nowUnixMillis, options)));
  }

  /**
   * Judges up to `maxKeys` of the keys a tick left waiting, in a transaction of their own, and
   * says whether more wait.
   */
  judgeRegrouped(maxKeys: number): boolean {
    if (this.#detector.regroupedKeys() === 0) return false;
    this.#commit((detector, apply) => apply(detector.judgeRegrouped(maxKeys)));
    return this.#detector.regroupedKeys() > 0;
  }

  counts(): PipelineCounts {
    this.#counts.sendLinks = this.#sendLinker.counts();
    const snapshot = structuredClone(this.#counts);
    this.#counts.storeWriteSeconds = [];
    return snapshot;
  }

  /** Runs `work` in one transaction; `apply` writes what one detector call changed. */
  #commit(work: (detector: Detector, apply: (changes: DetectorChanges) => void) => void): void {
    const { store, alerts } = this.#options;
    const started = performance.now();
    const apply = (changes: DetectorChanges) => {
      alerts?.incidentsRetracted(changes.retractedIncidentIds);
      store.applyChanges(changes);
      alerts?.incidentsChanged(changes.incidents);
      for (const finding of changes.findings) this.#counts.findings[finding.class]++;
    };
    try {
      store.transaction(() => work(this.#detector, apply));
    } catch (error) {
      this.#options.logger.error(
        `pipeline: store transaction failed, rebuilding detector state: ${(error as Error).message}`,
      );
      this.#detector = this.#restoredDetector();
      throw error;
    } finally {
      this.#counts.storeWriteSeconds.push((performance.now() - started) / 1000);
      if (this.#counts.storeWriteSeconds.length > 10_000) this.#counts.storeWriteSeconds.shift();
    }
  }

  #restoredDetector(): Detector {
    return restoreDetector(this.#options.store, this.#options.detectorConfig);
  }

  #count(spans: number, extracted: CheckedAttempts): void {
    const counts = this.#counts;
    counts.spans += spans;
    for (const [code, n] of Object.entries(extracted.refusals.byCode)) {
      counts.refusedSpans[code] = (counts.refusedSpans[code] ?? 0) + n;
    }
    counts.truncatedValues += extracted.refusals.truncatedValues;
    for (const attempt of extracted.attempts) counts.attempts[attempt.kind]++;
    for (const [reason, n] of Object.entries(extracted.invalid)) {
      counts.invalidValues[reason] = (counts.invalidValues[reason] ?? 0) + n;
    }
  }
}

/** What a payload's sender is told about the spans extraction refused. */
