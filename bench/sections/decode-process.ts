import { type DecodeOptions, decodeTraceRequest, SpanKind } from '@keyscope/otlp';
import { serviceDecodeOptions } from '../in-process-service.ts';
import { secondsOf } from '../measure.ts';
import { readPayloadFile } from '../payload-file.ts';

/**
 * One keyscope decode configuration in a process of its own, as the service runs it: a process
 * that also decodes with another configuration runs JIT code specialised for neither (about 8%
 * slower here). The parent sends `DecodeProcessRequest`s; this process answers each with a
 * `DecodeProcessReply`.
 */
export type DecodeProcessRequest =
  | { type: 'load'; payloadFile: string; filter: 'all' | 'service'; warmupPasses: number }
  | { type: 'pass' };

export type DecodeProcessReply =
  | { type: 'loaded'; spans: number; filter: string }
  | { type: 'passed'; seconds: number; spans: number }
  | { type: 'failed'; message: string };

let bodies: Buffer[] = [];
let options: DecodeOptions | undefined;

/** Spans decoded: every span of the payloads, returned or left out by the options. */
function pass(): number {
  let spans = 0;
  for (const body of bodies) spans += decodeTraceRequest(body, options).spanCount;
  return spans;
}

async function handle(request: DecodeProcessRequest): Promise<DecodeProcessReply> {
  if (request.type === 'load') {
    bodies = readPayloadFile(request.payloadFile);
    options = request.filter === 'service' ? await serviceDecodeOptions() : undefined;
    let spans = 0;
    for (let i = 0; i < request.warmupPasses; i++) spans = pass();
    return {
      type: 'loaded',
      spans,
      filter: options === undefined ? 'all attributes' : describeFilter(options),
    };
  }
  let spans = 0;
  const seconds = secondsOf(() => {
    spans = pass();
  });
  return { type: 'passed', seconds, spans };
}

process.on('message', (request: DecodeProcessRequest) => {
  handle(request).then(
    (reply) => process.send!(reply),
    (error: unknown) => process.send!({ type: 'failed', message: String((error as Error)?.stack ?? error) }),
  );
});
process.on('disconnect', () => process.exit(0));

const KIND_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(SpanKind).map(([name, kind]) => [kind, name]),
);

function unkeyedKinds(kinds: ReadonlySet<number> | undefined): string {
  return kinds === undefined
    ? ''
    : `; spans without a key returned only when ${[...kinds].map((kind) => KIND_NAMES[kind]).join(' or ')}`;
}

function describeFilter(options: DecodeOptions): string {
  const count = (keys: unknown) => (keys instanceof Set ? `${keys.size} keys` : 'all');
  const span = options.spanAttributes;
  const spanAttributes =
    typeof span === 'object' && 'whenKeyed' in span
      ? `${count(span.keys)} and ${count(span.always)} on every span, ${count(span.whenKeyed)} more on keyed spans${unkeyedKinds(span.unkeyedKinds)}`
      : count(span);
  return `span attributes ${spanAttributes}, resource attributes ${count(options.resourceAttributes)}, events ${options.events === false ? 'skipped' : 'kept'}`;
}
