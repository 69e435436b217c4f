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
 * Without `--no-concurrent-marking`. On two busy cores V8's concurrent marker can find no core
 * free and leave the marking of the old generation to one final pause (`--trace-gc` has shown
 * mark-compact pauses of 90–260 ms), which lands in the time from a duplicate's second execution
 * to its finding; without the marker V8 marks in steps between requests. The bench's history
 * section (empty store, p99 of that time at half load), with and without the flag in turn on a
 * busy 2-core machine (load average 3–10), 6 pairs: medians of
 * 111 ms with it and 148 ms without, but per-pair ratios of 0.19–2.02×, median 1.05×. It won
 * 0.19× and 0.34× under the heaviest load, where the service with it also ingested at 0.52× and
 * 0.87× the rate, so its half-load passes were offered less; at load ~4 it was 1.03–2.02×. Spans/s
 * at full rate, per-pair median 0.84×. One pair under `--trace-gc` (load ~3.5): the service's main
 * thread paused for mark-compact 13 and 25 ms without the flag, 185 ms (median of 3) with it; its
 * longest pauses in either were scavenges (178 and 367 ms), the young generation's collection
 * waiting for a core. Not better in pairs, so not a default: an operator's choice
 * for a service on few, busy cores (docs/configuration.md). `--single-threaded-gc`, tried once
 * beside it: 3 pairs, p99 at half load per-pair median 1.21× (0.36–1.47×). `--no-parallel-scavenge`
 * (scavenges on the main thread alone, waiting for no helper): 4 pairs, per-pair median 1.09×
 * (0.59–1.43×).
 *
 * Without `--heap-growing-percent`. Under `--trace-gc`, the history section's passes whose p99 at
 * half load went past ~30 ms were those where the service ran 2–7 mark-compacts back to back (one
 * every 150–250 ms, 5–16 ms each plus 10–25 ms of marking steps), with few or no scavenges between
 * them: after an idle spell V8 sets the old generation's next limit at ~1.3–1.6× what is live, and
 * each full collection promotes the requests in flight, which fills it again. Passes without them
 * read 8–23 ms. With `--heap-growing-percent=200` (the next limit at 3× what is live) such clusters
 * were gone in a traced run; run by turns untraced (the section's per-store medians, 0 / 2 M /
 * 20 M attempts retained): 27 / 20 / 12 and 11 / 14 / 10 ms, `=100` 11 / 16 / 16 ms, against 48 /
 * 12 / 58 and 27 / 13 / 46 ms without; peak RSS at 2 M 573–713 MiB against 501–503. A fixed
 * factor also stops V8 from growing faster under sustained allocation: a loop promoting garbage
 * beside 300,000 live objects ran 10 mark-compacts with `=100` against 6 without, 1.16× slower.
 * Better at the empty and the largest store, worse at 2 M and in memory, from few runs: not a
 * default, an operator's choice for a service whose load comes in bursts (docs/configuration.md).
 */
export const SERVICE_NODE_FLAGS: readonly string[] = Object.freeze([...YOUNG_GENERATION_FLAGS]);

/**
 * `keyscope analyze`: a batch job, judged by its wall time. It keeps the concurrent marker, which
 * marks on the core its one thread leaves free: with `--no-concurrent-marking` it ran ~1.2× slower
 * with a core free. Where no core is free the marker has nowhere to run: on a busy 2-core
 * machine, over the archive section's 1,000,000 spans (1,954 .pb files), the flag's wall time
 * was 0.99× and 0.94× (two calls of 4 pairs, per-pair medians; 0.84–1.19×).
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
