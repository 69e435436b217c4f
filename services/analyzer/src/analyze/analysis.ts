import {
  EARLIEST_SPAN_UNIX_MILLIS,
  type Mapping,
  mappingDecodeOptions,
  SendLinker,
  type SpanLimits,
} from '@keyscope/attempts';
import {
  type CompactAttemptLog,
  type CompactAttemptLogStats,
  createCompactAttemptLog,
  createDetector,
  type Detector,
  type DetectorChanges,
  type DetectorConfig,
  type DetectorStats,
  type Finding,
  type Incident,
  type RoutingEvent,
  type ScopeReportRow,
} from '@keyscope/detector';
import type { DecodeOptions, Span } from '@keyscope/otlp';
import { defaultServeConfig, type SpansConfig } from '../config.ts';
import { type ExtractionInputs, extractRecord, type RecordExtract } from './record-extract.ts';

/**
 * Event time between two expiries of the detector: each visits the findings and suspect keys
 * in memory, so not on every request.
 */
const EXPIRY_STEP_MILLIS = 60_000;

export interface AnalysisCounts {
  spans: number;
  /** Attempt spans seen before by (trace id, span id): a redelivery, not a second execution. */
  duplicateSpans: number;
  /** Attempts extracted, by kind, redelivered ones included. */
  attempts: { server: number; arrival: number; client: number; effect: number };
  /** Outcome, hit or scope values outside their closed lists, by attribute. */
  invalidValues: Record<string, number>;
  /** Spans refused under the time window and size limits, by code (see AnalysisOptions). */
  refusedSpans: Record<string, number>;
  /** Operations, targets and errors cut to their size limit. */
  truncatedValues: number;
  /**
   * Event time of the earliest span start and the latest span end, among spans inside the time
   * window; null before any span.
   */
  firstSpanUnixMillis: number | null;
  lastSpanUnixMillis: number | null;
}

export interface AnalysisResult {
  /** In order of first execution (then id), so two runs over one archive print the same. */
  findings: Finding[];
  /** In order of opening (then id). */
  incidents: Incident[];
  scopes: ScopeReportRow[];
  routingEvents: RoutingEvent[];
  counts: AnalysisCounts;
}

export interface AnalysisOptions {
  /**
   * The machine clock, read once when the run starts (Date.now by default). An archive is old and
   * comes in any order, so analyze does not hold spans to serve's window behind the service
   * clock; it refuses only what no archive can hold: a span starting before 2000-01-01 (an unset
   * time, or a unit mistake) or starting or ending more than `spans.maxFutureMillis` after this
   * clock.
   */
  readonly nowUnixMillis?: number;
  /** Size limits and `maxFutureMillis`, as serve's; serve's defaults when absent. */
  readonly spans?: SpansConfig;
}

/**
 * The detection engine of `keyscope serve` without its store: spans → attempts (the same mapping
 * as the embedded pipeline) → a detector with an in-memory attempt log, which like serve's store
 * refuses redelivered attempts by (trace id, span id).
 * Each `ingest` is one request, as one OTLP export is one `consumeSpans` in serve.
 *
 * Results are what serve's store would hold after the same requests: every change the detector
 * reports is applied in order, so a finding older than the retry
 * horizon, which the detector itself forgets, stays in the report as it stays in the database.
 * Spans are held to the same size limits as in serve, and to the time window of AnalysisOptions.
 */
export class Analysis {
  readonly decodeOptions: DecodeOptions;
  readonly #mapping: Mapping;
  readonly #detector: Detector;
  readonly #findings = new Map<string, Finding>();
  readonly #incidents = new Map<string, Incident>();
  readonly #counts: AnalysisCounts = {
    spans: 0,
    duplicateSpans: 0,
    attempts: { server: 0, arrival: 0, client: 0, effect: 0 },
    invalidValues: {},
    refusedSpans: {},
    truncatedValues: 0,
    firstSpanUnixMillis: null,
    lastSpanUnixMillis: null,
  };
  readonly #limits: SpanLimits;
  /** As in serve: keyless sends get the key of their server spans, across requests. */
  readonly #sendLinker = new SendLinker();
  #finished = false;
  readonly #attemptLog: CompactAttemptLog;
  /** The clock the detector last expired at (see #expire). */
  #expiredAtUnixMillis = Number.NEGATIVE_INFINITY;

  constructor(mapping: Mapping, detectorConfig: DetectorConfig, options: AnalysisOptions = {}) {
    this.#mapping = mapping;
    const spans = options.spans ?? defaultServeConfig().spans;
    this.#limits = Object.freeze({
      notBeforeUnixMillis: EARLIEST_SPAN_UNIX_MILLIS,
      notAfterUnixMillis: (options.nowUnixMillis ?? Date.now()) + spans.maxFutureMillis,
      maxKeyBytes: spans.maxKeyBytes,
      maxNameBytes: spans.maxNameBytes,
      maxValueBytes: spans.maxValueBytes,
    });
    // A fifth of the memory log's bytes an attempt: an archive's attempts are all in memory.
    this.#attemptLog = createCompactAttemptLog();
    this.#detector = createDetector(detectorConfig, { attemptLog: this.#attemptLog });
    // As in serve: materialize only the attributes the mapping reads; but every span, since the
    // report's time window reads spans extractAttempts does not.
    this.decodeOptions = mappingDecodeOptions(mapping, 'all');
  }

  /** What extracting a request's spans needs (see `extractRecord`). */
  get extraction(): ExtractionInputs {
    return { mapping: this.#mapping, limits: this.#limits };
  }

  /** Spans of one request. */
  ingest(spans: readonly Span[]): void {
    this.apply(extractRecord(spans, this.extraction));
  }

  /**
   * One request's extract, made here or on another thread: requests must be applied in the order
   * they were read, for the results to be those of serve over the same exports.
   */
  apply(record: RecordExtract): void {
    if (this.#finished) throw new Error('Analysis.apply called after finish');
    const extracted = record.extracted;
    // As in serve: the attempt log refuses redelivered attempts, which the detector counts.
    // Linked here, in the order requests were read: a send and its server span may be requests apart.
    this.#sendLinker.linkInto(extracted);
    const duplicatesBefore = this.#detector.stats().duplicateAttempts;
    for (const attempt of extracted.attempts) this.#counts.attempts[attempt.kind]++;
    const { refusedSpans } = this.#counts;
    for (const [code, n] of Object.entries(extracted.refusals.byCode)) {
      refusedSpans[code] = (refusedSpans[code] ?? 0) + n;
    }
    this.#counts.truncatedValues += extracted.refusals.truncatedValues;
    this.#apply(this.#detector.ingest(extracted));
    this.#count(record, this.#detector.stats().duplicateAttempts - duplicatesBefore, extracted.invalid);
    this.#expire(record);
  }

  /** The detector's own counts: keys in memory, attempts seen, the watermark. */
  detectorStats(): DetectorStats {
    return this.#detector.stats();
  }

  /** What the attempt log holds: keys, attempts and their bytes. */
  attemptLogStats(): CompactAttemptLogStats {
    return this.#attemptLog.stats();
  }

  get counts(): Readonly<AnalysisCounts> {
    return this.#counts;
  }

  /** Flushes at the watermark (event time: archives are as old as they are) and reports. Once. */
  finish(): AnalysisResult {
    if (!this.#finished) {
      this.#finished = true;
      this.#apply(this.#detector.flush());
    }
    return {
      findings: [...this.#findings.values()].sort(
        (a, b) => a.firstSeenUnixMillis - b.firstSeenUnixMillis || compare(a.id, b.id),
      ),
      incidents: [...this.#incidents.values()].sort(
        (a, b) => a.openedUnixMillis - b.openedUnixMillis || compare(a.id, b.id),
      ),
      scopes: this.#detector.scopeReport(),
      routingEvents: this.#detector.routingEvents(),
      counts: structuredClone(this.#counts),
    };
  }

  #apply(changes: DetectorChanges): void {
    // In the order serve's store applies them (KeyscopeStore.applyChanges).
    for (const id of changes.retractedFindingIds) this.#findings.delete(id);
    for (const finding of changes.findings) this.#findings.set(finding.id, finding);
    for (const id of changes.retractedIncidentIds) this.#incidents.delete(id);
    for (const incident of changes.incidents) this.#incidents.set(incident.id, incident);
  }

  /**
   * Bounds memory by the retry horizon as serve's clock does, with the archive's clock: the
   * latest first span start of a request so far, which one span with a skewed clock does not
   * move. With no key last seen more than the horizon before it (an archive within the horizon)
   * this changes nothing; a full `tick` would (see Detector.expire).
   */
  #expire(record: RecordExtract): void {
    const first = record.firstUnixMillis;
    if (first === null || first < this.#expiredAtUnixMillis + EXPIRY_STEP_MILLIS) return;
    this.#expiredAtUnixMillis = first;
    this.#apply(this.#detector.expire(first));
  }

  #count(record: RecordExtract, duplicateSpans: number, invalid: Record<string, number>): void {
    const counts = this.#counts;
    counts.spans += record.spans;
    counts.duplicateSpans += duplicateSpans;
    for (const [reason, n] of Object.entries(invalid)) {
      if (n > 0) counts.invalidValues[reason] = (counts.invalidValues[reason] ?? 0) + n;
    }
    if (record.firstUnixMillis !== null && record.lastUnixMillis !== null) {
      counts.firstSpanUnixMillis = Math.min(
        counts.firstSpanUnixMillis ?? record.firstUnixMillis,
        record.firstUnixMillis,
      );
      counts.lastSpanUnixMillis = Math.max(
        counts.lastSpanUnixMillis ?? record.lastUnixMillis,
        record.lastUnixMillis,
      );
    }
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
