import type { DeliveryCountersSnapshot } from '@keyscope/alerts';
import type { DetectorStats, ScopeReportRow } from '@keyscope/detector';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AuthFailureReason } from './auth/auth-failures.ts';
import type { PipelineCounts } from './pipeline/detection-pipeline.ts';
import type { IngestCountersSnapshot, TransportCounts } from './receivers/ingest-counters.ts';
import type { ArchiveCounts } from './receivers/payload-archive.ts';

/** Where /metrics reads from at scrape time; every source is optional (roles run a subset). */
export interface MetricSources {
  /** Undefined until the receivers run. */
  ingest?: () => IngestCountersSnapshot | undefined;
  queue?: () => { requests: number; spans: number };
  /** Bytes of bodies and messages still arriving, per transport. */
  buffered?: () => Record<string, number>;
  pipeline?: () => PipelineCounts;
  detector?: () => DetectorStats;
  /** The scope report, per tier (the API's `GET /api/v1/scopes`). */
  scopes?: () => readonly ScopeReportRow[];
  openIncidents?: () => number;
  alerts?: () => DeliveryCountersSnapshot;
  pendingAlerts?: () => number;
  db?: () => DbSnapshot;
  /** The payload archive's files and losses; undefined while `archive.path` is ''. */
  archive?: () => ArchiveCounts | undefined;
  /** Refused bearer tokens on the API (or a role's /metrics), by reason. */
  authFailures?: () => Readonly<Record<AuthFailureReason, number>>;
}

/** The embedded service's database, as /metrics shows it. */
export interface DbSnapshot {
  /** Pages in use (free pages left out), what `db.maxBytes` bounds. */
  bytes: number;
  maxBytes: number;
  /** False while its writes fail (the store's `writeFailure`). */
  writable: boolean;
  /** Rows purged since start, by why: past retention, or over `db.maxBytes`. */
  purgedRows: { retention: number; size: number };
}

/**
 * The Prometheus registry for one keyscope process. The stages keep plain counters; this reads
 * them at scrape time, so nothing on the hot path touches prom-client. A registry per process
 * object (not prom-client's global one) lets tests run several in one process.
 */
export function createMetrics(sources: MetricSources): { registry: Registry; render: () => Promise<string> } {
  const registry = new Registry();
  // Counters are absolute totals read from snapshots: reset, then set to the snapshot's value.
  const absolute = <T extends string>(
    counter: Counter<T>,
    values: [Partial<Record<T, string>>, number][],
  ) => {
    counter.reset();
    for (const [labels, value] of values) if (value > 0) counter.inc(labels, value);
  };

  type Labels = Record<string, string>;
  /** A counter whose series are read, all at once, from the ingest snapshot at scrape time. */
  const ingestCounter = (
    name: string,
    help: string,
    labelNames: string[],
    series: (transport: string, counts: TransportCounts) => [Labels, number][],
  ) =>
    new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        const ingest = sources.ingest?.();
        if (ingest === undefined) return;
        absolute(
          this,
          Object.entries(ingest).flatMap(([transport, counts]) => series(transport, counts)),
        );
      },
    });
  const byReason = (transport: string, table: Record<string, number>): [Labels, number][] =>
    Object.entries(table).map(([reason, n]) => [{ transport, reason }, n]);

  ingestCounter(
    'keyscope_spans_received_total',
    'Spans accepted by the OTLP receivers.',
    ['transport'],
    (transport, c) => [[{ transport }, c.spansAccepted]],
  );
  ingestCounter(
    'keyscope_spans_rejected_total',
    'Spans refused, by transport and reason (receiver reasons or KS_* error codes).',
    ['transport', 'reason'],
    (transport, c) => byReason(transport, c.spansRejected),
  );
  ingestCounter(
    'keyscope_log_records_received_total',
    'Log records accepted by the OTLP receivers (POST /v1/logs, LogsService/Export).',
    ['transport'],
    (transport, c) => [[{ transport }, c.logRecordsAccepted]],
  );
  ingestCounter(
    'keyscope_log_records_rejected_total',
    'Log records refused, by transport and reason (receiver reasons or KS_* error codes).',
    ['transport', 'reason'],
    (transport, c) => byReason(transport, c.logRecordsRejected),
  );
  ingestCounter(
    'keyscope_payloads_rejected_total',
    'OTLP requests refused, by transport and reason.',
    ['transport', 'reason'],
    (transport, c) => byReason(transport, c.payloadsRejected),
  );
  ingestCounter(
    'keyscope_received_bytes_total',
    'OTLP request bytes, as sent (compressed) and decoded (decompressed).',
    ['transport', 'form'],
    (transport, c) => [
      [{ transport, form: 'compressed' }, c.bytesReceivedCompressed],
      [{ transport, form: 'decompressed' }, c.bytesReceivedDecompressed],
    ],
  );
  new Gauge({
    name: 'keyscope_ingest_queue_depth',
    help: 'Requests and spans admitted by the receivers and not yet acknowledged by the pipeline.',
    labelNames: ['unit'],
    registers: [registry],
    collect() {
      const queue = sources.queue?.();
      if (queue === undefined) return;
      this.set({ unit: 'requests' }, queue.requests);
      this.set({ unit: 'spans' }, queue.spans);
    },
  });
  new Gauge({
    name: 'keyscope_ingest_buffered_bytes',
    help: 'Bytes of OTLP/HTTP bodies and OTLP/gRPC messages still arriving, not yet admitted (bounded by otlp.http.maxBufferedBodyBytes, otlp.grpc.maxBufferedMessageBytes).',
    labelNames: ['transport'],
    registers: [registry],
    collect() {
      const buffered = sources.buffered?.();
      if (buffered === undefined) return;
      for (const [transport, bytes] of Object.entries(buffered)) this.set({ transport }, bytes);
    },
  });

  // Read once per scrape, by the first pipeline metric; the ones after it reuse the snapshot.
  let pipeline: PipelineCounts | undefined;
  new Histogram({
    name: 'keyscope_store_write_seconds',
    help: 'Duration of the SQLite transaction that commits one OTLP request (or one tick).',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
    collect() {
      // The pipeline hands over the durations since the last scrape; the histogram keeps totals.
      pipeline = sources.pipeline?.();
      for (const seconds of pipeline?.storeWriteSeconds ?? []) this.observe(seconds);
    },
  });
  new Counter({
    name: 'keyscope_attempts_total',
    help: 'Mutation attempts extracted from spans, by kind (redelivered ones included; see keyscope_duplicate_spans_total).',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      if (pipeline === undefined) return;
      absolute(
        this,
        Object.entries(pipeline.attempts).map(([kind, n]) => [{ kind }, n]),
      );
    },
  });
  new Counter({
    name: 'keyscope_duplicate_spans_total',
    help: 'Attempt spans delivered more than once (same trace and span id) and ignored.',
    registers: [registry],
    collect() {
      if (pipeline !== undefined) absolute(this, [[{}, pipeline.duplicateSpans]]);
    },
  });
  new Counter({
    name: 'keyscope_values_truncated_total',
    help: 'Operations, client targets and errors cut to their size limit (spans.maxNameBytes, maxValueBytes) on spans that were kept.',
    registers: [registry],
    collect() {
      if (pipeline !== undefined) absolute(this, [[{}, pipeline.truncatedValues]]);
    },
  });
  new Counter({
    name: 'keyscope_send_links_total',
    help: "Keyless failed sends (a timeout: no key recorded) given the key of the server spans naming them as parent (linked), and the linker's entries dropped unmatched (evicted for room, expired past its horizon).",
    labelNames: ['result'],
    registers: [registry],
    collect() {
      if (pipeline === undefined) return;
      const { linked, evicted, expired } = pipeline.sendLinks;
      absolute(this, [
        [{ result: 'linked' }, linked],
        [{ result: 'evicted' }, evicted],
        [{ result: 'expired' }, expired],
      ]);
    },
  });
  new Counter({
    name: 'keyscope_findings_total',
    help: 'Findings reported (new or updated), by class.',
    labelNames: ['class'],
    registers: [registry],
    collect() {
      if (pipeline !== undefined)
        absolute(
          this,
          Object.entries(pipeline.findings).map(([c, n]) => [{ class: c }, n]),
        );
    },
  });
  new Gauge({
    name: 'keyscope_open_incidents',
    help: 'Incidents currently open.',
    registers: [registry],
    collect() {
      const open = sources.openIncidents?.();
      if (open !== undefined) this.set(open);
    },
  });
  new Gauge({
    name: 'keyscope_detector_keys',
    help: 'Idempotency keys the detector holds in memory, and how many of them are suspect.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats === undefined) return;
      this.set({ state: 'in_memory' }, stats.keysInMemory);
      this.set({ state: 'suspect' }, stats.suspectKeys);
    },
  });
  new Gauge({
    name: 'keyscope_evidence_coverage_ratio',
    help: 'Per tier, the share of its keyed requests keyscope sees whole (figure: arrivals_with_decision, requests_with_send, sends_with_server_span, keys_fully_visible); below 1 means sampled or lost spans. Absent while a figure has nothing to count.',
    labelNames: ['service', 'operation', 'figure'],
    registers: [registry],
    collect() {
      const rows = sources.scopes?.();
      if (rows === undefined) return;
      this.reset();
      for (const { service, operation, coverage } of rows) {
        const figures: [string, number | null][] = [
          ['arrivals_with_decision', coverage.arrivalsWithDecisionRatio],
          ['requests_with_send', coverage.requestsWithSendRatio],
          ['sends_with_server_span', coverage.sendsWithServerSpanRatio],
          ['keys_fully_visible', coverage.keysFullyVisibleRatio],
        ];
        for (const [figure, value] of figures)
          if (value !== null) this.set({ service, operation, figure }, value);
      }
    },
  });
  new Gauge({
    name: 'keyscope_replay_header_missing',
    help: '1 per tier whose outcomes are read from HTTP responses and whose repeats of a key on one node (detector.replayHeaderMinRepeats or more) never showed a replay: its Idempotent-Replayed header most likely does not reach keyscope (set with res.writeHead, which the HTTP instrumentation does not capture), so its replays read as executions. Absent for every other tier.',
    labelNames: ['service', 'operation'],
    registers: [registry],
    collect() {
      const rows = sources.scopes?.();
      if (rows === undefined) return;
      this.reset();
      for (const { service, operation, replayHeader } of rows)
        if (replayHeader?.verdict === 'missing') this.set({ service, operation }, 1);
    },
  });
  new Gauge({
    name: 'keyscope_evidence_coverage_pending_attempts',
    help: "Keyed attempts the evidence coverage join holds until they are final (twice detector.allowedLatenessMillis past their key's newest attempt).",
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) this.set(stats.coverageEntries);
    },
  });
  new Counter({
    name: 'keyscope_evidence_coverage_evicted_total',
    help: 'Keyed attempts counted into the evidence coverage before they were final, because detector.maxCoverageEntries were held.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) absolute(this, [[{}, stats.coverageEvictedEntries]]);
    },
  });
  new Gauge({
    name: 'keyscope_tiers',
    help: 'Tiers (service and operation) the scope report keeps one by one; at most detector.maxTiers.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) this.set(stats.tiers);
    },
  });
  new Counter({
    name: 'keyscope_tiers_overflow_total',
    help: 'Server attempts and arrivals at tiers first seen past detector.maxTiers: their scope report and coverage go to one overflow bucket ("and N more tiers"); their keys are judged for duplicates all the same.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) absolute(this, [[{}, stats.tierOverflowAttempts]]);
    },
  });
  new Gauge({
    name: 'keyscope_routing_followup_keys',
    help: 'Keys with a mark of a possibly lost execution that a routing event inferred later can still revise; at most detector.maxKeys.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) this.set(stats.routingFollowUpKeys);
    },
  });
  new Counter({
    name: 'keyscope_routing_followup_dropped_total',
    help: 'Keys dropped from the routing follow-up because detector.maxKeys were followed: routing events inferred later no longer revise their findings.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) absolute(this, [[{}, stats.routingFollowUpDropped]]);
    },
  });
  new Gauge({
    name: 'keyscope_regrouped_keys_waiting',
    help: 'Keys a changed routing event judges again that wait for their turn (serve judges them 16 per turn of the event loop); their incidents settle, and page, once none waits.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) this.set(stats.regroupedKeys);
    },
  });
  new Gauge({
    name: 'keyscope_detector_interned_names',
    help: 'Tier, node and tenant names the detector holds for its keys; compacted when it doubles.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) this.set(stats.internedNames);
    },
  });
  new Gauge({
    name: 'keyscope_hot_keys',
    help: 'Idempotency keys in memory that reached detector.maxAttemptsPerKey (one key sent on many requests); their later attempts are not kept.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) this.set(stats.hotKeys);
    },
  });
  new Counter({
    name: 'keyscope_key_attempts_capped_total',
    help: 'Attempts not kept as evidence because their key already held detector.maxAttemptsPerKey.',
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats !== undefined) absolute(this, [[{}, stats.cappedAttempts]]);
    },
  });
  new Counter({
    name: 'keyscope_store_list_overflow_total',
    help: "Store and node names left out of findings' and incidents' lists past detector.maxStoresPerFinding and detector.maxStoresPerIncident, counted as each list grows past its cap; storesTotal and nodesTotal count every one.",
    labelNames: ['holder', 'list'],
    registers: [registry],
    collect() {
      const stats = sources.detector?.();
      if (stats === undefined) return;
      absolute(this, [
        [{ holder: 'finding', list: 'stores' }, stats.findingStoresLeftOut],
        [{ holder: 'finding', list: 'nodes' }, stats.findingNodesLeftOut],
        [{ holder: 'incident', list: 'stores' }, stats.incidentStoresLeftOut],
        [{ holder: 'incident', list: 'nodes' }, stats.incidentNodesLeftOut],
      ]);
    },
  });
  new Counter({
    name: 'keyscope_alert_deliveries_total',
    help: 'Alert deliveries by sink and outcome.',
    labelNames: ['sink', 'outcome'],
    registers: [registry],
    collect() {
      const alerts = sources.alerts?.();
      if (alerts === undefined) return;
      absolute(
        this,
        Object.entries(alerts).flatMap(([sink, outcomes]) =>
          Object.entries(outcomes).map(
            ([outcome, n]) => [{ sink, outcome }, n] as [{ sink: string; outcome: string }, number],
          ),
        ),
      );
    },
  });
  new Gauge({
    name: 'keyscope_alerts_pending',
    help: 'Alert deliveries in the outbox not yet delivered.',
    registers: [registry],
    collect() {
      const pending = sources.pendingAlerts?.();
      if (pending !== undefined) this.set(pending);
    },
  });

  // Read once per scrape, by the first database metric; the ones after it reuse the snapshot.
  let db: DbSnapshot | undefined;
  new Gauge({
    name: 'keyscope_db_bytes',
    help: 'Bytes of the SQLite pages in use (free pages left out): what db.maxBytes bounds.',
    registers: [registry],
    collect() {
      db = sources.db?.();
      if (db !== undefined) this.set(db.bytes);
    },
  });
  new Gauge({
    name: 'keyscope_db_max_bytes',
    help: 'db.maxBytes: past it the oldest rows are purged.',
    registers: [registry],
    collect() {
      if (db !== undefined) this.set(db.maxBytes);
    },
  });
  new Gauge({
    name: 'keyscope_db_writable',
    help: '1 while database writes succeed, 0 while they fail (disk full, I/O error, damaged file); /readyz is 503 then.',
    registers: [registry],
    collect() {
      if (db !== undefined) this.set(db.writable ? 1 : 0);
    },
  });
  new Counter({
    name: 'keyscope_db_purged_rows_total',
    help: 'Rows purged, by reason: retention (past their time) or size (oldest first, over db.maxBytes).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      if (db === undefined) return;
      absolute(this, [
        [{ reason: 'retention' }, db.purgedRows.retention],
        [{ reason: 'size' }, db.purgedRows.size],
      ]);
    },
  });

  // Read once per scrape, by the first archive metric; the ones after it reuse the snapshot.
  let archive: ArchiveCounts | undefined;
  new Counter({
    name: 'keyscope_archive_payloads_total',
    help: 'Acknowledged OTLP payloads written to the archive (archive.path).',
    registers: [registry],
    collect() {
      archive = sources.archive?.();
      if (archive !== undefined) absolute(this, [[{}, archive.payloads]]);
    },
  });
  new Counter({
    name: 'keyscope_archive_written_bytes_total',
    help: 'Bytes written to the archive files (gzipped).',
    registers: [registry],
    collect() {
      if (archive !== undefined) absolute(this, [[{}, archive.writtenBytes]]);
    },
  });
  new Counter({
    name: 'keyscope_archive_write_failures_total',
    help: 'Acknowledged OTLP payloads not archived, by reason: write_failed (the file system refused the write), queue_full (past archive.maxQueuedBytes waiting), unencodable.',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      if (archive === undefined) return;
      absolute(
        this,
        Object.entries(archive.failures).map(([reason, n]) => [{ reason }, n]),
      );
    },
  });
  new Counter({
    name: 'keyscope_archive_deleted_files_total',
    help: 'Oldest archive files deleted to keep the archive within archive.maxBytes.',
    registers: [registry],
    collect() {
      if (archive !== undefined) absolute(this, [[{}, archive.deletedFiles]]);
    },
  });
  new Gauge({
    name: 'keyscope_archive_bytes',
    help: 'Bytes of the archive files on disk, the one being written included: what archive.maxBytes bounds.',
    registers: [registry],
    collect() {
      if (archive !== undefined) this.set(archive.diskBytes);
    },
  });

  new Counter({
    name: 'keyscope_auth_failures_total',
    help: 'Requests refused for their bearer token, by reason: missing (no Bearer header), invalid (an unknown token), throttled (429: the client address presented too many unknown tokens).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const failures = sources.authFailures?.();
      if (failures === undefined) return;
      absolute(
        this,
        Object.entries(failures).map(([reason, n]) => [{ reason }, n]),
      );
    },
  });

  return { registry, render: () => registry.metrics() };
}
