import { pathToFileURL } from 'node:url';
import type { BenchSizes } from '../bench-sizes.ts';
import { ingestStream, type StreamDetector, simulatedAttemptStream } from './detector-stream.ts';

/**
 * One side of `--detector-baseline`: a process that times one detector on this checkout's
 * benchmark stream, one sample per request, so two of them (this checkout's detector and another
 * checkout's) can take turns on the same stream. The stream is always extracted by this
 * checkout: the other detector reads today's attempts, not the ones its own extraction made.
 */

export type PaceRequest =
  /** `checkout`: a checkout's root; none: this one's. */
  { type: 'start'; sizes: BenchSizes; checkout?: string } | { type: 'pass' };

export type PaceReply =
  | { type: 'ready'; warmupPasses: number; passesPerSample: number }
  | { type: 'passed'; attemptsPerSecond: number }
  | { type: 'failed'; message: string };

type CreateDetector = () => StreamDetector;

/**
 * Passes over the stream before the first sample, and per sample. One pass over 200,000 spans takes
 * a fraction of a second, and a process's pace moves with its heap's size from pass to pass (by
 * up to 2× in the first dozens): a sample of several passes after several untimed ones reads
 * less of that.
 */
const WARMUP_PASSES = 8;
const PASSES_PER_SAMPLE = 4;

async function detectorOf(checkout: string | undefined): Promise<CreateDetector> {
  if (checkout === undefined) return (await import('@keyscope/detector')).createDetector;
  const index = pathToFileURL(`${checkout}/packages/detector/src/index.ts`).href;
  const module = (await import(index)) as { createDetector?: CreateDetector };
  if (typeof module.createDetector !== 'function') throw new Error(`${index} exports no createDetector`);
  return module.createDetector;
}

let create: CreateDetector | undefined;
let stream: ReturnType<typeof simulatedAttemptStream> | undefined;

async function answer(request: PaceRequest): Promise<PaceReply> {
  if (request.type === 'start') {
    create = await detectorOf(request.checkout);
    stream = simulatedAttemptStream(request.sizes.detector.streamSpans, request.sizes.seed);
    // Untimed: the first passes of a fresh process compile what the later ones run, and size its heap.
    for (let i = 0; i < WARMUP_PASSES; i++) ingestStream(stream, create);
    return { type: 'ready', warmupPasses: WARMUP_PASSES, passesPerSample: PASSES_PER_SAMPLE };
  }
  if (create === undefined || stream === undefined) throw new Error('a pass before start');
  let seconds = 0;
  for (let i = 0; i < PASSES_PER_SAMPLE; i++)
    seconds += stream.attempts / ingestStream(stream, create).attemptsPerSecond;
  return { type: 'passed', attemptsPerSecond: (PASSES_PER_SAMPLE * stream.attempts) / seconds };
}

process.on('message', (request: PaceRequest) => {
  answer(request).then(
    (reply) => process.send?.(reply),
    (error: Error) => process.send?.({ type: 'failed', message: error.stack ?? String(error) }),
  );
});
// A parent that goes away (Ctrl-C on `pnpm bench`) takes this process with it.
process.on('disconnect', () => process.exit(0));
