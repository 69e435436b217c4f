export type { DedupOutcome } from './dedup-store.ts';
export { duplicateSome, shuffle, splitIntoPayloads } from './delivery.ts';
export { traceIdRatioSampled } from './head-sampling.ts';
export type {
  BrownoutSpec,
  CallerSpec,
  ClientSpec,
  DedupScope,
  DedupSpec,
  DownstreamSpec,
  EffectConvention,
  ErrorSpikeSpec,
  ExecutionFailureSpec,
  FailureSpec,
  LatencySpec,
  MutationServiceSpec,
  NodeDownSpec,
  ProcessKillSpec,
  ProxySpec,
  RegionFailoverSpec,
  RegionSpec,
  RoutingSpec,
  SamplingSpec,
  Scenario,
  ServiceSpec,
} from './scenario.ts';
export { validateScenario } from './scenario.ts';
export type { ScenarioOverrides } from './scenarios.ts';
export * as scenarios from './scenarios.ts';
export {
  type BatchOptions,
  DEFAULT_SEED,
  type SimulateOptions,
  type Simulation,
  type SimulationBatches,
  simulate,
  simulateBatches,
} from './simulate.ts';
export { IDEMPOTENCY_KEY_HEADER, SIDE_EFFECT_SPAN_NAME } from './span-builder.ts';
export type { GroundTruth, TruthClass, TruthExecution, TruthKey, TruthRoutingEvent } from './truth.ts';
