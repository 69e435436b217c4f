/**
 * Builders and fixtures for tests; never imported by `src/`. This entry point stays light (no
 * sockets, no child processes); heavier helpers have their own entry points:
 * `@keyscope/testkit/wire` (raw HTTP, gzip bodies, the receivers' protobuf answers),
 * `@keyscope/testkit/sdk` (spans as the OpenTelemetry SDK's ReadableSpans) and
 * `@keyscope/testkit/kafka` (a Kafka cluster per test file).
 */
export {
  attributes,
  clientSpan,
  hexId,
  internalSpan,
  type ResourceOptions,
  resource,
  type SpanOptions,
  serverSpan,
  span,
  TEST_EPOCH_UNIX_MILLIS,
} from '@keyscope/attempts/testing';
export {
  activity,
  arrival,
  client,
  effect,
  type PlacementInput,
  placement,
  server,
} from './attempt-builders.ts';
export { BlockingConsumer } from './blocking-consumer.ts';
export { metricValue } from './prometheus-text.ts';
export { RecordingConsumer } from './recording-consumer.ts';
export { createTextSink, type TextSink } from './text-sink.ts';
export { tracesJson } from './traces-json.ts';
