export { type AnalyzeOutput, defaultAnalyzeThreads, runAnalyze } from './analyze/run-analyze.ts';
export {
  defaultServeConfig,
  envOverrides,
  readConfigFile,
  resolveServeConfig,
  type ServeConfig,
} from './config.ts';
export { ANALYZER_ERRORS } from './errors.ts';
export { startDetectRole } from './kafka/detect-role.ts';
export { startIngestRole } from './kafka/ingest-role.ts';
export { createKafkaClient } from './kafka/kafka-client.ts';
export { KafkaCounters } from './kafka/kafka-counters.ts';
export type { RunningRole } from './kafka/running-role.ts';
export type { ListenAddress } from './listen-address.ts';
export { consoleLogger, type Logger, silentLogger } from './logger.ts';
export { ANALYZE_NODE_FLAGS, nodeFlagsFor, SERVICE_NODE_FLAGS } from './node-flags.ts';
export { CountingConsumer } from './pipeline/counting-consumer.ts';
export {
  type IngestCountersSnapshot,
  RECEIVER_REJECT_REASONS,
  type RejectReason,
  type Transport,
  type TransportCounts,
} from './receivers/ingest-counters.ts';
export { TRACE_SERVICE_EXPORT_PATH } from './receivers/otlp-grpc.ts';
export { OTLP_HTTP_TRACES_PATH } from './receivers/otlp-http.ts';
export {
  type ReceiverDependencies,
  type RunningReceivers,
  startReceivers,
} from './receivers/start-receivers.ts';
export { type RunningService, type ServeDependencies, startServe } from './serve.ts';
