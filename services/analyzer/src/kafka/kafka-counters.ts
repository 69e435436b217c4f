import { Counter, Gauge, Registry } from 'prom-client';

/**
 * What the Kafka roles did, as plain counters the hot path increments; /metrics reads them at
 * scrape time. Skipped records are counted by reason from a closed list: the `KS_*` code of the
 * error that made the record unreadable (`KS_OTLP_*`, `KS_KAFKA_RECORD_INVALID`), `empty_value`
 * for a record with no value, or `internal_error` for a decoder bug.
 */
export class KafkaCounters {
  /** Records read, by topic. */
  readonly consumed = new Map<string, number>();
  /** Records skipped as unreadable, by topic and reason. */
  readonly skipped = new Map<string, number>();
  /** Records written, by topic. */
  readonly produced = new Map<string, number>();
  spansDecoded = 0;
  /** Spans of the traces topic refused under the time window and size limits, by `KS_SPAN_*` code. */
  readonly spansRefused = new Map<string, number>();
  attemptsExtracted = 0;
  /** Writes of gathered attempts and activity to the attempts topic by the ingest role's consumer. */
  attemptWrites = 0;
  attemptsDetected = 0;
  /** Transactions in which the detect role applied records to a partition's state. */
  detectTransactions = 0;
  /** Times a partition was paused because Kafka or the store refused work. */
  backoffs = 0;
  /** Partitions whose detector state was rebuilt from the attempts topic. */
  rebuilds = 0;
  /** Partitions taken up from the state file this instance kept, still current. */
  resumes = 0;
  /** Records read again while rebuilding, skipped because older than the retry horizon. */
  rebuildSkipped = 0;
  /** Partitions this instance owns right now. */
  partitionsOwned = 0;
  /** The ingest role's keyless sends linked to a key, and its linker's dropped entries. */
  readonly sendLinks = { linked: 0, evicted: 0, expired: 0 };

  count(map: Map<string, number>, label: string, n = 1): void {
    map.set(label, (map.get(label) ?? 0) + n);
  }

  skip(topic: string, reason: string): void {
    this.count(this.skipped, `${topic}\u0000${reason}`);
  }

  snapshot() {
    return {
      consumed: Object.fromEntries(this.consumed),
      skipped: [...this.skipped].map(([label, n]) => {
        const [topic, reason] = label.split('\u0000') as [string, string];
        return { topic, reason, count: n };
      }),
      produced: Object.fromEntries(this.produced),
      spansDecoded: this.spansDecoded,
      spansRefused: Object.fromEntries(this.spansRefused),
      attemptsExtracted: this.attemptsExtracted,
      attemptWrites: this.attemptWrites,
      attemptsDetected: this.attemptsDetected,
      detectTransactions: this.detectTransactions,
      backoffs: this.backoffs,
      rebuilds: this.rebuilds,
      resumes: this.resumes,
      rebuildSkipped: this.rebuildSkipped,
      partitionsOwned: this.partitionsOwned,
      sendLinks: { ...this.sendLinks },
    };
  }
}

/** The Prometheus exposition of one process's Kafka counters (several roles may share them). */
export function createKafkaMetrics(counters: KafkaCounters): { render: () => Promise<string> } {
  const registry = new Registry();
  const absolute = (metric: Counter<string>, values: [Record<string, string>, number][]) => {
    metric.reset();
    for (const [labels, value] of values) if (value > 0) metric.inc(labels, value);
  };
  new Counter({
    name: 'keyscope_kafka_records_consumed_total',
    help: 'Records read from Kafka, by topic.',
    labelNames: ['topic'],
    registers: [registry],
    collect() {
      absolute(
        this,
        [...counters.consumed].map(([topic, n]) => [{ topic }, n]),
      );
    },
  });
  new Counter({
    name: 'keyscope_kafka_records_skipped_total',
    help: 'Unreadable records counted, logged, dead-lettered when configured, and skipped; by topic and reason.',
    labelNames: ['topic', 'reason'],
    registers: [registry],
    collect() {
      absolute(
        this,
        counters.snapshot().skipped.map(({ topic, reason, count }) => [{ topic, reason }, count]),
      );
    },
  });
  new Counter({
    name: 'keyscope_kafka_spans_refused_total',
    help: "Spans of the traces topic refused under the time window and size limits, by the rule's code.",
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      absolute(
        this,
        [...counters.spansRefused].map(([reason, n]) => [{ reason }, n]),
      );
    },
  });
  new Counter({
    name: 'keyscope_kafka_send_links_total',
    help: "Keyless failed sends the ingest role gave the key of the server spans naming them as parent (linked), and its linker's entries dropped unmatched (evicted for room, expired past its horizon).",
    labelNames: ['result'],
    registers: [registry],
    collect() {
      absolute(
        this,
        Object.entries(counters.sendLinks).map(([result, n]) => [{ result }, n]),
      );
    },
  });
  new Counter({
    name: 'keyscope_kafka_records_produced_total',
    help: 'Records written to Kafka, by topic.',
    labelNames: ['topic'],
    registers: [registry],
    collect() {
      absolute(
        this,
        [...counters.produced].map(([topic, n]) => [{ topic }, n]),
      );
    },
  });
  const plain = (name: string, help: string, read: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        absolute(this, [[{}, read()]]);
      },
    });
  plain(
    'keyscope_kafka_spans_decoded_total',
    'Spans decoded from the traces topic.',
    () => counters.spansDecoded,
  );
  plain(
    'keyscope_kafka_attempts_extracted_total',
    'Attempts the ingest role wrote to the attempts topic.',
    () => counters.attemptsExtracted,
  );
  plain(
    'keyscope_kafka_attempt_writes_total',
    'Writes by which the ingest role put what it read from the traces topic on the attempts topic (a backlog is written up to 64 messages at a time).',
    () => counters.attemptWrites,
  );
  plain(
    'keyscope_kafka_attempts_detected_total',
    'Attempts the detect role applied to its partitions.',
    () => counters.attemptsDetected,
  );
  plain(
    'keyscope_kafka_detect_transactions_total',
    "Transactions in which the detect role applied attempts records to a partition's state (a backlog is applied up to 2,000 records at a time).",
    () => counters.detectTransactions,
  );
  plain(
    'keyscope_kafka_backoffs_total',
    'Times a partition was paused because Kafka or the store refused work.',
    () => counters.backoffs,
  );
  plain(
    'keyscope_kafka_partition_rebuilds_total',
    'Attempts partitions whose state was rebuilt from the topic.',
    () => counters.rebuilds,
  );
  plain(
    'keyscope_kafka_partition_resumes_total',
    'Attempts partitions taken up from the state file this instance kept (still current).',
    () => counters.resumes,
  );
  new Gauge({
    name: 'keyscope_kafka_partitions_owned',
    help: 'Attempts partitions this detect instance owns.',
    registers: [registry],
    collect() {
      this.set(counters.partitionsOwned);
    },
  });
  return { render: () => registry.metrics() };
}
