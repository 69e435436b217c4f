/**
 * A scenario is plain data: the topology, the traffic and the failures of one simulated run. The
 * named builders in `scenarios.ts` return these; tests tweak fields on the returned object. Times
 * are relative to `startUnixMillis` unless a name says otherwise.
 */
export interface Scenario {
  name: string;
  /** Wall-clock time of the first request, Unix epoch milliseconds. */
  startUnixMillis: number;
  /** Mutation requests arrive (Poisson) over this window; retries and redrives may run past it. */
  durationMillis: number;
  /** Logical mutation requests, one idempotency key each (double submits and collisions reuse it). */
  requests: number;
  /**
   * When set, generation stops at exactly this many spans: requests that would cross the budget
   * are dropped whole (so truth stays consistent) and the rest is filled with health checks.
   */
  spanBudget?: number;
  /** Share of spans that carry no idempotency key (GET traffic, callers' own spans), in [0, 1). */
  nonMutationSpanFraction: number;
  /** Error rate of ordinary GET traffic outside error spikes, in [0, 1]. */
  backgroundErrorRate: number;
  regions: RegionSpec[];
  caller: CallerSpec;
  /** Mutation services the caller calls; each flow picks one by `weight`. */
  services: MutationServiceSpec[];
  /** Tenant ids; each logical request belongs to one. */
  tenants: string[];
  failures: FailureSpec[];
  /** Seeds the choice of failed nodes when a failure leaves `node` unset; defaults to the run seed. */
  failureSeed?: number;
  /**
   * Spans of requests that were in flight on a node when it failed: `emitted` (the process kept
   * running behind a partition and exported them) or `lost` (they never reach the pipeline,
   * although the mutation executed).
   */
  inFlightSpansOnFailure: 'emitted' | 'lost';
  /** Head sampling in the services' SDKs; absent: every span is recorded. */
  sampling?: SamplingSpec;
}

/**
 * Head sampling as the OpenTelemetry SDKs do it: each service's sampler is
 * `ParentBased(TraceIdRatioBased(ratio))` — a span whose trace starts in it is sampled by its trace
 * id, any other follows its parent's decision, propagated whether or not the parent was exported —
 * and a service in `keyedSpansAlways` puts the gate's keyed-span sampler in front (`@keyscope/gate`,
 * `createKeyedSpanSampler`): a span that carries a key is recorded whatever its parent decided, and
 * its children follow it. A span not sampled is dropped (`GroundTruth.sampledOut`).
 */
export interface SamplingSpec {
  /** `TraceIdRatioBased` ratio in [0, 1], by service name; a service not named keeps every trace it starts. */
  ratioByService: Record<string, number>;
  keyedSpansAlways?: string[];
}

export interface RegionSpec {
  name: string;
  /** Nodes of each cluster are spread over these zones round-robin. */
  zones: string[];
  /** Cluster names; every service runs `nodesPerCluster` nodes in each. */
  clusters: string[];
}

/** The client-facing service (e.g. `checkout`) that receives user requests and calls the others. */
export interface CallerSpec {
  name: string;
  /** Public host name, `server.address` of its own SERVER spans. */
  address: string;
  /** Route of the user request that triggers a mutation, e.g. `/checkout`. */
  route: string;
  nodesPerCluster: number;
}

export interface LatencySpec {
  medianMillis: number;
  p99Millis: number;
}

/**
 * How widely a service's dedup store is shared, narrowest first: the values the services write as
 * `idempotency.scope` (docs/design.md). `tenant` is a namespace, not a placement level.
 */
export type DedupScope = 'node' | 'cluster' | 'region' | 'tenant' | 'global';

export interface DedupSpec {
  scope: DedupScope;
  /** How long an admitted key is remembered, from admission. */
  keyTtlMillis: number;
  /**
   * With a lock the key is written at admission and a concurrent attempt is answered
   * `in_progress`; without one it is written only when the first attempt completes, so a
   * concurrent attempt is admitted too.
   */
  inFlightLock: boolean;
  /** How long an in-flight lock blocks others before it is considered abandoned. */
  inFlightLeaseMillis: number;
  /** When true a repeat with another payload is answered `mismatch` (422) instead of a replay. */
  fingerprintsPayload: boolean;
  /** Where the `idempotency.*` attributes go: an INTERNAL `idempotency.check` child, or the SERVER span. */
  decisionOn: 'check_span' | 'server_span';
  /** When false, `idempotency.store` is omitted and consumers derive the store from scope + resource. */
  recordStoreId: boolean;
  /** Probability that a store lookup fails (`error`, 503) outside error spikes. */
  storeErrorRate: number;
  /**
   * When an admitted request fails (an `execution_failure`), the service gives its key back so
   * that a retry executes (AWS Lambda Powertools deletes the record on an exception). Default
   * false: the failed request completes its key like any other.
   */
  releaseOnFailure?: boolean;
}

/**
 * How the service says what happened to the side effect of an admitted request:
 * `attribute` — `idempotency.effect` (`committed` / `none`) and `idempotency.released` on its
 * SERVER span; `span` — an INTERNAL `SIDE_EFFECT_SPAN_NAME` span carrying the key around each
 * charge that commits (the mapping names it in `sideEffectSpans`). Unset: it says nothing.
 */
export type EffectConvention = 'attribute' | 'span';

export interface RoutingSpec {
  /** `session`: sticky by customer session; `random`: any healthy node per send. */
  policy: 'session' | 'random';
  /**
   * How far traffic moves when its target is known to be down: to other nodes of the caller's
   * cluster, to other clusters of the region, or to other regions.
   */
  failover: 'cluster' | 'region' | 'global';
  /** Health checking delay: sends keep reaching a failed node (and timing out) for this long. */
  detectionMillis: number;
  /** Retries are enforced to the node of the first send, even if it is down. */
  pinRetries: boolean;
}

/** How the calling side of an edge sends: the idempotency key is kept across every resend. */
export interface ClientSpec {
  timeoutMillis: number;
  /** Sends per submission, the first included. */
  maxAttempts: number;
  /** Backoff before resend n is `backoffMillis * 2^(n-1)` with ±50% jitter. */
  backoffMillis: number;
  /** When set, a submission that gave up is sent again by a job this long after (in a new trace). */
  redriveAfterMillis?: number;
  /**
   * The client's HTTP instrumentation records request headers (the key) only once a response
   * arrives, as `@opentelemetry/instrumentation-http` does: the CLIENT span of a send that timed
   * out carries no key. Unset: every CLIENT span carries it.
   */
  keyOnlyWithResponse?: boolean;
  /**
   * Each resend starts a trace of its own, its CLIENT span a root (the HTTP semantic conventions
   * allow either), with `http.request.resend_count` saying which send it is. Unset: resends stay
   * in the trace of the first send.
   */
  retriesInNewTrace?: boolean;
}

/** An uninstrumented proxy between client and service that retries POSTs on its own. */
export interface ProxySpec {
  /** `network.peer.address` the client sees. */
  address: string;
  perTryTimeoutMillis: number;
  /** Tries per client send, the first included; retries avoid nodes already tried. */
  maxTries: number;
  retryOn5xx: boolean;
  /**
   * Whether a request it had forwarded goes to the next node when that node's connection breaks
   * under it (nginx's `proxy_next_upstream error non_idempotent`). false is nginx's default for a
   * POST: a killed node's in-flight request is answered `502 Bad Gateway`, with no reset at the
   * client; a refused connection, which forwarded nothing, still moves on. Unset: true.
   */
  resendsForwarded?: boolean;
}

export interface ServiceSpec {
  name: string;
  /** `server.address` callers use, e.g. `payments.internal`. */
  address: string;
  port: number;
  /** The mutation's route, e.g. `/payments`; `GET {route}/:id` is its read route. */
  route: string;
  nodesPerCluster: number;
  latency: LatencySpec;
  dedup: DedupSpec;
  routing: RoutingSpec;
  effectConvention?: EffectConvention;
}

/** A service the front service calls with the same key while it executes (e.g. `ledger`). */
export interface DownstreamSpec extends ServiceSpec {
  /** How the front service calls it. */
  client: ClientSpec;
}

export interface MutationServiceSpec extends ServiceSpec {
  /** Relative share of mutation requests. */
  weight: number;
  /** How the caller calls this service. */
  client: ClientSpec;
  proxy?: ProxySpec;
  downstream?: DownstreamSpec;
  /** Share of requests the user submits twice, concurrently, with the same key. */
  doubleSubmitFraction: number;
  doubleSubmitMaxGapMillis: number;
  /** Share of keys that a second tenant also uses (client-generated keys without tenant prefix). */
  keyCollisionFraction: number;
  keyCollisionMaxDelayMillis: number;
  /** `uuid` keys, or `sequence` keys such as `ord-000123` that tenants generate independently. */
  keyFormat: 'uuid' | 'sequence';
}

interface FailureBase {
  service: string;
  /** Offset from the scenario start. */
  startOffsetMillis: number;
  durationMillis: number;
}

/**
 * A node stops answering and stops emitting spans. `node` indexes the service's nodes; unset: seeded
 * pick. Without `kill` the node is cut off (a partition, a host that stopped answering): sends to
 * it time out, and the spans of requests in flight follow `inFlightSpansOnFailure`.
 */
export interface NodeDownSpec extends FailureBase {
  type: 'node_down';
  node?: number;
  /** Its process was killed (SIGKILL, an OOM kill) at the start, and restarts at the end. */
  kill?: ProcessKillSpec;
}

/**
 * What a killed process takes with it, as the real parts behave:
 *
 * - its OpenTelemetry SDK exported its spans every `exportIntervalMillis` (the BatchSpanProcessor's
 *   `scheduledDelayMillis`, 5 s by default), so the spans that ended since its last export and
 *   those of requests still open are lost — while what those requests did (a charge) happened,
 *   and the ground truth records it;
 * - the kernel closes its sockets: a request in flight on it ends at once with a connection reset
 *   (`ECONNRESET`) at its caller, its store record left as it was (an in-flight lock stays until
 *   its lease runs out), its downstream calls stopped;
 * - until it is back, connecting to it is refused (`ECONNREFUSED`) at once, and the caller's
 *   balancer avoids the node for the rest of that call (a passive health check), so the call's
 *   next send goes to another node.
 */
export interface ProcessKillSpec {
  exportIntervalMillis: number;
}

/** Every node of the service in `region` stops answering; with `global` failover traffic moves away. */
export interface RegionFailoverSpec extends FailureBase {
  type: 'region_failover';
  region: string;
}

/** A node fails `errorRate` of its requests: dedup lookups answer `error`, GETs answer 503. */
export interface ErrorSpikeSpec extends FailureBase {
  type: 'error_spike';
  node?: number;
  errorRate: number;
}

/**
 * A node fails `failureRate` of the requests it admitted (its dedup store works): `before_effect`,
 * the processor is unavailable and nothing is charged (503); `after_effect`, the charge commits and
 * then the request fails (500: it timed out writing the result, or crashed). With
 * `dedup.releaseOnFailure` the key is given back, so a retry executes.
 */
export interface ExecutionFailureSpec extends FailureBase {
  type: 'execution_failure';
  node?: number;
  failureRate: number;
  phase: 'before_effect' | 'after_effect';
}

/**
 * A brownout: a node keeps answering, `slowdownMillis` later than it would (every request it
 * serves, mutations and reads). Above the client's timeout, every request it admits times out at
 * the client, which retries it, on another node when the balancer picks one.
 */
export interface BrownoutSpec extends FailureBase {
  type: 'brownout';
  node?: number;
  slowdownMillis: number;
}

export type FailureSpec =
  | NodeDownSpec
  | RegionFailoverSpec
  | ErrorSpikeSpec
  | ExecutionFailureSpec
  | BrownoutSpec;

/** Rejects scenarios that cannot run; the message names the field. */
export function validateScenario(scenario: Scenario): void {
  const fail = (field: string, expected: string, received: unknown): never => {
    throw new RangeError(
      `scenario ${scenario.name}: ${field} must be ${expected}, received ${String(received)}`,
    );
  };
  if (!(scenario.requests >= 0) || !Number.isInteger(scenario.requests))
    fail('requests', 'a non-negative integer', scenario.requests);
  if (!(scenario.durationMillis > 0)) fail('durationMillis', '> 0', scenario.durationMillis);
  if (!(scenario.nonMutationSpanFraction >= 0 && scenario.nonMutationSpanFraction < 1))
    fail('nonMutationSpanFraction', 'in [0, 1)', scenario.nonMutationSpanFraction);
  if (scenario.spanBudget !== undefined && !(scenario.spanBudget >= 0))
    fail('spanBudget', '>= 0', scenario.spanBudget);
  if (scenario.regions.length === 0) fail('regions', 'non-empty', '[]');
  // Cluster names must be unique across regions: a cluster-scoped store is named by
  // `k8s.cluster.name` alone when the span omits `idempotency.store`.
  const clusters = new Set<string>();
  for (const region of scenario.regions) {
    if (region.clusters.length === 0) fail(`regions[${region.name}].clusters`, 'non-empty', '[]');
    if (region.zones.length === 0) fail(`regions[${region.name}].zones`, 'non-empty', '[]');
    for (const cluster of region.clusters) {
      if (clusters.has(cluster)) fail(`regions[${region.name}].clusters`, 'unique across regions', cluster);
      clusters.add(cluster);
    }
  }
  if (scenario.tenants.length === 0) fail('tenants', 'non-empty', '[]');
  if (scenario.services.length === 0) fail('services', 'non-empty', '[]');
  if (scenario.caller.nodesPerCluster < 1)
    fail('caller.nodesPerCluster', '>= 1', scenario.caller.nodesPerCluster);
  const names = new Set<string>([scenario.caller.name]);
  const checkService = (service: ServiceSpec, path: string): void => {
    if (names.has(service.name)) fail(`${path}.name`, 'unique', service.name);
    names.add(service.name);
    if (service.nodesPerCluster < 1) fail(`${path}.nodesPerCluster`, '>= 1', service.nodesPerCluster);
    if (!(service.latency.p99Millis >= service.latency.medianMillis && service.latency.medianMillis > 0))
      fail(`${path}.latency`, '0 < medianMillis <= p99Millis', JSON.stringify(service.latency));
    if (!(service.dedup.keyTtlMillis > 0))
      fail(`${path}.dedup.keyTtlMillis`, '> 0', service.dedup.keyTtlMillis);
  };
  scenario.services.forEach((service, i) => {
    checkService(service, `services[${i}]`);
    if (service.downstream) checkService(service.downstream, `services[${i}].downstream`);
    if (service.client.maxAttempts < 1)
      fail(`services[${i}].client.maxAttempts`, '>= 1', service.client.maxAttempts);
    if (service.proxy && service.proxy.maxTries < 1)
      fail(`services[${i}].proxy.maxTries`, '>= 1', service.proxy.maxTries);
  });
  if (scenario.sampling !== undefined) {
    for (const [service, ratio] of Object.entries(scenario.sampling.ratioByService)) {
      if (!names.has(service))
        fail(`sampling.ratioByService.${service}`, 'a service of the scenario', service);
      if (!(ratio >= 0 && ratio <= 1)) fail(`sampling.ratioByService.${service}`, 'in [0, 1]', ratio);
    }
    for (const service of scenario.sampling.keyedSpansAlways ?? [])
      if (!names.has(service)) fail('sampling.keyedSpansAlways', 'services of the scenario', service);
  }
  scenario.failures.forEach((failure, i) => {
    if (!names.has(failure.service))
      fail(`failures[${i}].service`, 'a service of the scenario', failure.service);
    if (failure.type === 'region_failover' && !scenario.regions.some((r) => r.name === failure.region))
      fail(`failures[${i}].region`, 'a region of the scenario', failure.region);
    if (!(failure.durationMillis > 0)) fail(`failures[${i}].durationMillis`, '> 0', failure.durationMillis);
    if (failure.type === 'execution_failure' && !(failure.failureRate >= 0 && failure.failureRate <= 1))
      fail(`failures[${i}].failureRate`, 'in [0, 1]', failure.failureRate);
    if (failure.type === 'node_down' && failure.kill && !(failure.kill.exportIntervalMillis > 0))
      fail(`failures[${i}].kill.exportIntervalMillis`, '> 0', failure.kill.exportIntervalMillis);
    if (failure.type === 'brownout' && !(failure.slowdownMillis > 0))
      fail(`failures[${i}].slowdownMillis`, '> 0', failure.slowdownMillis);
  });
}
