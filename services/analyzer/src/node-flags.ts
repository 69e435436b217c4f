/**
 * Node.js flags `keyscope` runs with: the `keyscope` script in package.json, the container's
 * entrypoint (deploy/keyscope.Dockerfile) and the benchmark's service process pass them, and a
 * test keeps the three in step with this list. The installed `bin/keyscope.js` cannot pass flags
 * to the node that runs it: set them in NODE_OPTIONS there.
 *
 * `--max-semi-space-size=64` (MiB; V8's default cap is 16): under load the embedded service
 * allocates about a kilobyte per span, nearly all of it dead within a request, and each scavenge
 * copies whatever is still in flight; a larger young generation fills up less often. Measured
 * here over six 200,000-span passes through the pipeline (the workload's generation included):
 * 96 scavenges taking 551 ms, against 156 taking 666 ms with the default; on the bench's persisted
 * ingest, paired runs of the same build: 1.06× spans/s and 1.075× spans per CPU-second (median of
 * 16 pairs). It costs up to ~100 MiB more resident memory under load.
 */
export const KEYSCOPE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];
