import { pathToFileURL } from 'node:url';
import type { BenchSizes } from '../bench-sizes.ts';
import { ingestStream, type StreamDetector, simulatedAttemptStream } from './detector-stream.ts';

/**
 * One side of `--detector-baseline`: a process that times one detector on this checkout's
 * benchmark stream, one pass per request, so two of them (this checkout's detector and another
 * checkout's) can take turns on the same stream. The stream is always extracted by this
 * checkout: the other detector reads today's attempts, not the ones its own extraction made.
 */

export type PaceRequest =
  /** `checkout`: a checkout's root; none: this one's. */
  { type: 'start'; sizes: BenchSizes; checkout?: string } | { type: 'pass' };

export type PaceReply =
  | { type: 'ready' }
  | { type: 'passed'; attemptsPerSecond: number; cpuShare: number }
  | { type: 'failed'; message: string };

type CreateDetector = () => StreamDetector;

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
    // Untimed: the first pass of a fresh process compiles what the later ones run.
    ingestStream(stream, create);
    ingestStream(stream, create);
    return { type: 'ready' };
  }
  if (create === undefined || stream === undefined) throw new Error('a pass before start');
  const pass = ingestStream(stream, create);
  return { type: 'passed', attemptsPerSecond: pass.attemptsPerSecond, cpuShare: pass.cpuShare };
}

process.on('message', (request: PaceRequest) => {
  answer(request).then(
    (reply) => process.send?.(reply),
    (error: Error) => process.send?.({ type: 'failed', message: error.stack ?? String(error) }),
  );
});
// A parent that goes away (Ctrl-C on `pnpm bench`) takes this process with it.
process.on('disconnect', () => process.exit(0));
