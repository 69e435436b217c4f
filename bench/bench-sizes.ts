/**
 * How much work each section does. `full` is what `pnpm bench` reports; `quick` exercises every
 * section in seconds, for development and for the harness's own test, and its figures mean little.
 */
export interface BenchSizes {
  /** Timed repetitions per measurement; figures are their medians. */
  repetitions: number;
  /** Seed of every simulated workload. */
  seed: number;
  decode: {
    /** Payloads of 512 spans, each decoded once per repetition. */
    payloads: number;
    /** Untimed passes over every payload before the first timed one. */
    warmupPasses: number;
  };
  ingest: {
    /** Requests of 512 spans per timed repetition. */
    requestsPerRepetition: number;
    warmupRequests: number;
    connections: number;
  };
  detector: {
    /** Spans simulated for the throughput and latency stream. */
    streamSpans: number;
    /** Distinct keys tracked when measuring memory per key. */
    memoryKeys: number;
    /** Nodes, and seconds of their activity, when measuring the routing window's memory per node. */
    windowNodes: number;
    windowSeconds: number;
  };
  persistence: {
    /** Spans per repetition; every repetition starts from an empty database. */
    spans: number;
    /**
     * Concurrent requests (keep-alive connections) the load generator keeps open: the
     * OpenTelemetry Collector's exporters send with `sending_queue.num_consumers` of them (10 by
     * default). The target is checked at this figure.
     */
    connections: number;
    /** Also measured, taking turns with `connections`: fewer requests in flight share fewer group commits. */
    fewerConnections: number;
  };
  analyze: {
    /** Spans of the workload `keyscope analyze` and the batch baselines read, once per repetition. */
    spans: number;
  };
  history: {
    /**
     * Attempts written into each store before its passes (one store per entry, the first 0: a new
     * database), of distinct keys spread over `windowHours`, with the node activity of that time.
     */
    retainedAttempts: readonly number[];
    /** Hours of the retry horizon the history covers, up to a minute before the workload starts. */
    windowHours: number;
    /** Spans per pass, each pass under fresh keys. */
    spans: number;
    warmupPasses: number;
    connections: number;
  };
  flood: {
    /** Seconds of each of the `repetitions` windows of the unique-key flood. */
    windowSeconds: number;
  };
  kafka: {
    /**
     * Spans on the traces topic, read once by the ingest role, whose attempts the detect role then
     * reads; each run is cut into `repetitions + 1` windows. The mock broker keeps 5 MiB per
     * partition, which bounds it: every attempts partition holds a copy of all node activity.
     */
    spans: number;
  };
}

export const FULL_SIZES: BenchSizes = Object.freeze({
  repetitions: 5,
  seed: 1,
  decode: { payloads: 200, warmupPasses: 2 },
  ingest: { requestsPerRepetition: 1000, warmupRequests: 300, connections: 4 },
  // 7,200 seconds: the routing window's two hours.
  detector: { streamSpans: 200_000, memoryKeys: 500_000, windowNodes: 10, windowSeconds: 7_200 },
  // 5 repetitions × 200,000 = 1,000,000 spans through the persisted path.
  persistence: { spans: 200_000, connections: 10, fewerConnections: 4 },
  analyze: { spans: 1_000_000 },
  history: {
    retainedAttempts: [0, 2_000_000, 20_000_000],
    windowHours: 23,
    spans: 200_000,
    warmupPasses: 2,
    connections: 10,
  },
  kafka: { spans: 120_000 },
  // 5 windows × 6 s: a 30-second flood.
  flood: { windowSeconds: 6 },
});

export const QUICK_SIZES: BenchSizes = Object.freeze({
  repetitions: 5,
  seed: 1,
  decode: { payloads: 8, warmupPasses: 1 },
  ingest: { requestsPerRepetition: 20, warmupRequests: 10, connections: 4 },
  detector: { streamSpans: 10_000, memoryKeys: 10_000, windowNodes: 2, windowSeconds: 600 },
  persistence: { spans: 10_000, connections: 10, fewerConnections: 4 },
  analyze: { spans: 10_000 },
  history: {
    retainedAttempts: [0, 50_000, 200_000],
    windowHours: 6,
    spans: 10_000,
    warmupPasses: 1,
    connections: 10,
  },
  kafka: { spans: 30_000 },
  flood: { windowSeconds: 0.5 },
});
