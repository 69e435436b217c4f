/**
 * Node.js flags `keyscope` runs with: the `keyscope` script in package.json, the container's
 * entrypoint (deploy/keyscope.Dockerfile) and the benchmark's service process pass them, and a
 * test keeps the three in step with this list. The installed `keyscope` command (bin/keyscope.js)
 * cannot pass flags to the node that runs it, and node refuses `--min-semi-space-size` in
 * NODE_OPTIONS: started without them, it starts node again with them.
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
export const KEYSCOPE_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=64',
  '--min-semi-space-size=64',
];
