/**
 * Node.js flags each `keyscope` subcommand runs with. The installed `keyscope` command
 * (bin/keyscope.js) cannot pass flags to the node that runs it, and node refuses most of them in
 * NODE_OPTIONS: started without them, it starts node again with those `nodeFlagsFor` gives its
 * subcommand. The container's entrypoint (deploy/keyscope.Dockerfile, which runs serve) and the
 * benchmark's service process pass `SERVICE_NODE_FLAGS` themselves; a test keeps them in step with
 * these lists.
 */

/**
 * The young generation, for every subcommand that processes spans.
 *
 * `--max-semi-space-size=64` (MiB; V8's default cap is 16): under load the embedded service
 * allocates about a kilobyte per span, nearly all of it dead within a request, and each scavenge
 * copies whatever is still in flight; a larger young generation fills up less often. Measured
 * here over six 200,000-span passes through the pipeline (the workload's generation included):
 * 96 scavenges taking 551 ms, against 156 taking 666 ms with the default; on the bench's persisted
 * ingest, paired runs of the same build: 1.06× spans/s and 1.075× spans per CPU-second (median of
 * 16 pairs). It costs up to ~100 MiB more resident memory under load.
 *
 * `--min-semi-space-size=64`: the young generation starts at that size and stays there. Without
 * it V8 starts at 1 MiB, grows it under load and shrinks it again after major collections, and
 * each regrowth is fresh memory: every page of it faults in on first touch, and page faults are
 * what a virtual machine charges most for. Pinned to one core, the service took ~2,000 page
 * faults per 200,000 spans with it against ~4,300 without; paired runs of the same build:
 * 1.04× spans/s (median of 16 pairs; 32 and 128 MiB measured 0.95× against 64). Pages become
 * resident when first used, so a fresh service takes no more memory; after load, the young
 * generation keeps the memory it reached (up to 2 × 64 MiB) instead of giving it back.
 */
const YOUNG_GENERATION_FLAGS: readonly string[] = ['--max-semi-space-size=64', '--min-semi-space-size=64'];

/**
 * `keyscope serve`, in every role (the embedded service and the Kafka roles), and `keyscope demo`,
 * which serves: services, judged by their tail latency, often on few cores.
 *
 * `--no-concurrent-marking`: V8 marks the old generation on a helper thread while JavaScript runs,
 * then finishes in one pause. On two busy cores that thread finds no core free, the marking is
 * left to the final pause, and `--trace-gc` shows mark-compact pauses of 90–260 ms, which land in
 * the time from a duplicate's second execution to its committed finding. Without the concurrent
 * marker V8 marks in steps between requests. The bench's history section on this 2-core machine
 * (empty store, p99 of that time at half load), with and without the flag in turn: medians of
 * HISTORY_MEDIANS, per-pair ratios HISTORY_RATIOS. `--single-threaded-gc`, tried
 * once beside it: SINGLE_THREADED.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = Object.freeze([
  ...YOUNG_GENERATION_FLAGS,
  '--no-concurrent-marking',
]);

/**
 * `keyscope analyze`: a batch job, judged by its wall time. It keeps the concurrent marker, which
 * marks on the core analyze's one thread leaves free: ANALYZE_MEASURED.
 */
export const ANALYZE_NODE_FLAGS: readonly string[] = Object.freeze([...YOUNG_GENERATION_FLAGS]);

/**
 * The flags for the subcommand `command` (the first argument of `keyscope`). Help and unknown
 * commands print a few lines and exit: none, so the command does not start node twice for them.
 */
export function nodeFlagsFor(command: string | undefined): readonly string[] {
  switch (command) {
    case 'serve':
    case 'demo':
      return SERVICE_NODE_FLAGS;
    case 'analyze':
      return ANALYZE_NODE_FLAGS;
    default:
      return [];
  }
}
