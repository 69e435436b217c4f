import { createRequire } from 'node:module';

/**
 * The baseline a user would reach for: protobufjs with the static code generated from the
 * official opentelemetry-proto definitions, as @opentelemetry/otlp-transformer 0.200 shipped it
 * (installed as `otlp-proto-reference`; later versions dropped protobufjs). packages/otlp's
 * equivalence tests decode against the same code.
 */
const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: generated protobufjs code has no types we can import
const root: any = require('otlp-proto-reference/build/src/generated/root.js');
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

// biome-ignore lint/suspicious/noExplicitAny: protobufjs message objects
export type Message = any;

/** protobufjs's full decode of one request into its message objects. */
export function decodeRequestWithProtobufjs(bytes: Uint8Array): Message {
  return ExportTraceServiceRequest.decode(bytes);
}

/**
 * Decodes every field of the request into protobufjs message objects (ids stay bytes, int64 stay
 * Long: protobufjs's own full decode, no conversion to keyscope's span) and counts the spans.
 */
export function decodeWithProtobufjs(bytes: Uint8Array): number {
  const request = decodeRequestWithProtobufjs(bytes);
  let spans = 0;
  for (const resourceSpans of request.resourceSpans as Message[]) {
    for (const scopeSpans of resourceSpans.scopeSpans as Message[]) spans += scopeSpans.spans.length;
  }
  return spans;
}
