import type { DownstreamSpec, FailureSpec, MutationServiceSpec, RegionSpec, Scenario } from './scenario.ts';

/**
 * Named scenarios: each builds a plain `Scenario` for one failure mode (or one sound setup that
 * must produce no findings). Overrides replace top-level fields; for deeper changes, edit the
 * returned object (it is fresh on every call).
 */
export type ScenarioOverrides = Partial<Scenario>;

/** 2025-06-02T09:00:00Z: fixed, so runs are comparable across days. */
export const DEFAULT_START_UNIX_MILLIS = Date.UTC(2025, 5, 2, 9, 0, 0);

const EU: RegionSpec = {
  name: 'eu-west-1',
  zones: ['eu-west-1a', 'eu-west-1b', 'eu-west-1c'],
  clusters: ['prod-euw1-blue', 'prod-euw1-green'],
};
const US: RegionSpec = {
  name: 'us-east-1',
  zones: ['us-east-1a', 'us-east-1b', 'us-east-1c'],
  clusters: ['prod-use1-blue', 'prod-use1-green'],
};

const SECOND = 1000;
const HOUR = 3600 * SECOND;

function base(name: string, services: MutationServiceSpec[], overrides: ScenarioOverrides): Scenario {
  return {
    name,
    startUnixMillis: DEFAULT_START_UNIX_MILLIS,
    durationMillis: 30 * SECOND,
    requests: 600,
    nonMutationSpanFraction: 0.8,
    backgroundErrorRate: 0.005,
    regions: [structuredClone(EU)],
    caller: { name: 'checkout', address: 'shop.example.com', route: '/checkout', nodesPerCluster: 2 },
    services,
    tenants: ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'],
    failures: [],
    inFlightSpansOnFailure: 'emitted',
    ...overrides,
  };
}

/**
 * `payments` as most teams first deploy it: a node-local dedup store (in-process cache or sidecar),
 * sticky sessions, a 2 s client timeout against a p99 of 1.8 s, three sends with the same key.
 */
function payments(overrides: Partial<MutationServiceSpec> = {}): MutationServiceSpec {
  return {
    name: 'payments',
    address: 'payments.internal',
    port: 8443,
    route: '/payments',
    nodesPerCluster: 3,
    latency: { medianMillis: 700, p99Millis: 1800 },
    dedup: {
      scope: 'node',
      keyTtlMillis: 24 * HOUR,
      inFlightLock: true,
      inFlightLeaseMillis: 30 * SECOND,
      fingerprintsPayload: false,
      decisionOn: 'check_span',
      recordStoreId: true,
      storeErrorRate: 0,
    },
    routing: { policy: 'session', failover: 'cluster', detectionMillis: 1500, pinRetries: false },
    client: { timeoutMillis: 2 * SECOND, maxAttempts: 3, backoffMillis: 200 },
    weight: 1,
    doubleSubmitFraction: 0,
    doubleSubmitMaxGapMillis: 50,
    keyCollisionFraction: 0,
    keyCollisionMaxDelayMillis: 20 * SECOND,
    keyFormat: 'uuid',
    ...overrides,
  };
}

/** A ledger that dedups on its own, region-wide, and records the decision on its SERVER span. */
function ledger(overrides: Partial<DownstreamSpec> = {}): DownstreamSpec {
  return {
    name: 'ledger',
    address: 'ledger.internal',
    port: 8443,
    route: '/ledger/entries',
    nodesPerCluster: 2,
    latency: { medianMillis: 25, p99Millis: 120 },
    dedup: {
      scope: 'region',
      keyTtlMillis: 24 * HOUR,
      inFlightLock: true,
      inFlightLeaseMillis: 30 * SECOND,
      fingerprintsPayload: true,
      decisionOn: 'server_span',
      recordStoreId: true,
      storeErrorRate: 0,
    },
    routing: { policy: 'random', failover: 'region', detectionMillis: 1500, pinRetries: false },
    client: { timeoutMillis: SECOND, maxAttempts: 1, backoffMillis: 100 },
    ...overrides,
  };
}

function nodeDowns(
  count: number,
  firstOffsetMillis: number,
  everyMillis: number,
  service = 'payments',
): FailureSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    type: 'node_down' as const,
    service,
    startOffsetMillis: firstOffsetMillis + i * everyMillis,
    durationMillis: 8 * SECOND,
  }));
}

/** Node-local stores, sticky sessions; nodes fail and sessions fail over within the cluster. */
export function nodeFailover(overrides: ScenarioOverrides = {}): Scenario {
  return base('node-failover', [payments({ latency: { medianMillis: 900, p99Millis: 1900 } })], {
    requests: 1200,
    failures: nodeDowns(2, 8 * SECOND, 11 * SECOND),
    ...overrides,
  });
}

/**
 * The node failover with the payments processes killed (SIGKILL, an OOM kill) instead of cut off
 * (`ProcessKillSpec`): each takes the spans it had not exported (up to 5 s of them) with it, so a
 * payment in flight on it ran there unseen, and its client, whose connection was reset, sent it
 * again to another node, refused by the dead one at first.
 */
export function nodeKill(overrides: ScenarioOverrides = {}): Scenario {
  const failures = nodeDowns(2, 8 * SECOND, 11 * SECOND).map((failure) => ({
    ...failure,
    kill: { exportIntervalMillis: 5 * SECOND },
  }));
  return base('node-kill', [payments({ latency: { medianMillis: 900, p99Millis: 1900 } })], {
    requests: 1200,
    failures,
    ...overrides,
  });
}

/**
 * The node kill behind a proxy, as nginx in front of the payments nodes behaves by default: it
 * moves a refused connection to the next node, but answers the requests it had forwarded to the
 * killed process with `502 Bad Gateway` (it does not re-send a POST), so the client sees a 502 with
 * no server span under it, never a reset, and sends the key again.
 */
export function nodeKillBehindProxy(overrides: ScenarioOverrides = {}): Scenario {
  const scenario = nodeKill(overrides);
  scenario.name = 'node-kill-behind-proxy';
  for (const service of scenario.services)
    service.proxy = {
      address: '10.0.0.10',
      perTryTimeoutMillis: 60 * SECOND,
      maxTries: 2,
      retryOn5xx: false,
      resendsForwarded: false,
    };
  return scenario;
}

/** Region-scoped stores in two regions; one region fails and traffic moves to the other. */
export function regionFailover(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({ latency: { medianMillis: 900, p99Millis: 1900 } });
  service.dedup.scope = 'region';
  service.routing = { policy: 'session', failover: 'global', detectionMillis: 3 * SECOND, pinRetries: false };
  return base('region-failover', [service], {
    requests: 1000,
    regions: [structuredClone(EU), structuredClone(US)],
    failures: [
      {
        type: 'region_failover',
        service: 'payments',
        region: 'eu-west-1',
        startOffsetMillis: 10 * SECOND,
        durationMillis: 12 * SECOND,
      },
    ],
    ...overrides,
  });
}

/** No failures: a random balancer and a slow tail past the client timeout scatter retries over nodes. */
export function slowTail(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({ latency: { medianMillis: 600, p99Millis: 2400 } });
  service.routing.policy = 'random';
  return base('slow-tail', [service], overrides);
}

/** The client sends once; a proxy in between retries the POST on another node after 1 s. */
export function proxyRetry(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({
    latency: { medianMillis: 400, p99Millis: 1500 },
    client: { timeoutMillis: 3 * SECOND, maxAttempts: 2, backoffMillis: 200 },
    proxy: { address: '10.0.0.10', perTryTimeoutMillis: SECOND, maxTries: 2, retryOn5xx: true },
  });
  return base('proxy-retry', [service], overrides);
}

/**
 * A proxy that re-sends a POST to the next node when a try times out after 1 s (nginx
 * `proxy_next_upstream timeout` with `proxy_read_timeout 1s`), in front of a slow tail; the
 * client gives up after 2 s and sends once more. Its HTTP instrumentation records the key only
 * when a response arrived, so a send that timed out has a keyless CLIENT span: its proxy's
 * retries are linked to it only by the parent span id both server spans name.
 */
export function proxyTimeoutRetry(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({
    latency: { medianMillis: 800, p99Millis: 2400 },
    client: { timeoutMillis: 2 * SECOND, maxAttempts: 2, backoffMillis: 200, keyOnlyWithResponse: true },
    proxy: { address: '10.0.0.10', perTryTimeoutMillis: SECOND, maxTries: 2, retryOn5xx: false },
  });
  return base('proxy-timeout-retry', [service], overrides);
}

/** A region-wide store forgets keys after 30 s; a job redrives failed payments after 45 s. */
export function ttlExpired(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({
    latency: { medianMillis: 600, p99Millis: 2400 },
    client: {
      timeoutMillis: 2 * SECOND,
      maxAttempts: 1,
      backoffMillis: 200,
      redriveAfterMillis: 45 * SECOND,
    },
  });
  service.dedup.scope = 'region';
  service.dedup.keyTtlMillis = 30 * SECOND;
  return base('ttl-expired', [service], overrides);
}

/** Users double-submit within 50 ms; the region-wide store has no in-flight lock. */
export function race(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({
    latency: { medianMillis: 300, p99Millis: 900 },
    doubleSubmitFraction: 0.08,
  });
  service.dedup.scope = 'region';
  service.dedup.inFlightLock = false;
  return base('race', [service], overrides);
}

/** payments executes twice (slow tail, random balancing); the ledger's own dedup answers `hit`. */
export function downstreamAbsorbed(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({ latency: { medianMillis: 600, p99Millis: 2400 }, downstream: ledger() });
  service.routing.policy = 'random';
  return base('downstream-absorbed', [service], overrides);
}

/**
 * Tenants generate sequential keys (`ord-0000123`) and the store is global without tenant prefix:
 * a second tenant's payment is answered with the first one's replay. The spans omit
 * `idempotency.store`, so the store must be derived (`global`).
 */
export function keyCollision(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({
    latency: { medianMillis: 300, p99Millis: 900 },
    keyFormat: 'sequence',
    keyCollisionFraction: 0.1,
  });
  service.dedup.scope = 'global';
  service.dedup.recordStoreId = false;
  return base('key-collision', [service], { requests: 600, ...overrides });
}

/** A node's store fails for 20 s; retries execute on other nodes: once, but across stores. */
export function scopeViolation(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({ latency: { medianMillis: 200, p99Millis: 600 } });
  service.routing.policy = 'random';
  return base('scope-violation', [service], {
    failures: [
      {
        type: 'error_spike',
        service: 'payments',
        startOffsetMillis: 10 * SECOND,
        durationMillis: 10 * SECOND,
        errorRate: 0.8,
      },
    ],
    ...overrides,
  });
}

/**
 * One payments node browns out for 12 s: it answers 2.5 s later than usual, past the client's 2 s
 * timeout, and its SERVER spans end when the client gives up, as the HTTP instrumentation ends
 * them; the client retries, the random balancer mostly picks another node, whose node-local
 * store has never seen the key: the payment runs twice. The other nodes answer as before.
 */
export function brownout(overrides: ScenarioOverrides = {}): Scenario {
  return base('brownout', [brownoutPayments()], {
    requests: 2400,
    failures: [brownoutOf(1, 12 * SECOND)],
    ...overrides,
  });
}

/**
 * The same service slowing everywhere at once (a shared database, a bad deploy): the same timeouts
 * and retries, but no node slower than the others, so no routing changed.
 */
export function slowEverywhere(overrides: ScenarioOverrides = {}): Scenario {
  const service = brownoutPayments();
  const nodes = 2 * service.nodesPerCluster;
  return base('slow-everywhere', [service], {
    requests: 2400,
    failures: Array.from({ length: nodes }, (_, node) => brownoutOf(node, 12 * SECOND)),
    ...overrides,
  });
}

function brownoutPayments(): MutationServiceSpec {
  // Latency as the lab's real nodes serve it: lognormal, median 300 ms, σ 0.77 (p99 ≈ 1.8 s), so
  // a healthy node's own slow tail crosses the client's timeout now and then.
  const service = payments({ latency: { medianMillis: 300, p99Millis: 1800 } });
  service.routing.policy = 'random';
  return service;
}

function brownoutOf(node: number, startOffsetMillis: number): FailureSpec {
  return {
    type: 'brownout',
    service: 'payments',
    node,
    startOffsetMillis,
    durationMillis: 12 * SECOND,
    slowdownMillis: 2500,
  };
}

/**
 * One payments node, for 20 s, admits payments and fails 60% of them before the charge (its
 * processor is unavailable): it releases the key and answers 503 before anything is charged, and a
 * proxy that re-sends non-idempotent requests on 503 (nginx `proxy_next_upstream http_503
 * non_idempotent`) sends each to another node, where it runs once. Nothing ran twice; every such
 * key reached a second store. The spans say so only with an `effectConvention`.
 */
export function releaseBeforeEffect(overrides: ScenarioOverrides = {}): Scenario {
  return releaseOnFailure('release-before-effect', 'before_effect', overrides);
}

/**
 * The same node and proxy, but the failures come after the charge committed (the request then
 * times out writing its result and answers 500): every re-sent key is charged twice.
 */
export function releaseAfterEffect(overrides: ScenarioOverrides = {}): Scenario {
  return releaseOnFailure('release-after-effect', 'after_effect', overrides);
}

function releaseOnFailure(
  name: string,
  phase: 'before_effect' | 'after_effect',
  overrides: ScenarioOverrides,
): Scenario {
  const service = payments({
    latency: { medianMillis: 150, p99Millis: 500 },
    client: { timeoutMillis: 5 * SECOND, maxAttempts: 1, backoffMillis: 200 },
    proxy: { address: '10.0.0.10', perTryTimeoutMillis: 2 * SECOND, maxTries: 2, retryOn5xx: true },
  });
  service.dedup.releaseOnFailure = true;
  return base(name, [service], {
    requests: 1500,
    failures: [
      {
        type: 'execution_failure',
        service: 'payments',
        node: 0,
        startOffsetMillis: 5 * SECOND,
        durationMillis: 20 * SECOND,
        failureRate: 0.6,
        phase,
      },
    ],
    ...overrides,
  });
}

/** Control: node-local stores, but retries are enforced to the first node (even when it is down). */
export function pinnedRetries(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({ latency: { medianMillis: 600, p99Millis: 2400 } });
  service.routing.pinRetries = true;
  return base('pinned-retries', [service], {
    failures: nodeDowns(2, 8 * SECOND, 11 * SECOND),
    ...overrides,
  });
}

/** Control: a cluster-wide store; nodes fail over only within their cluster. */
export function clusterStoreInClusterFailover(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({ latency: { medianMillis: 900, p99Millis: 2400 } });
  service.dedup.scope = 'cluster';
  return base('cluster-store-in-cluster-failover', [service], {
    failures: nodeDowns(2, 8 * SECOND, 11 * SECOND),
    ...overrides,
  });
}

/** Control: one global store; random balancing, slow tails, node and region failures. */
export function globalStore(overrides: ScenarioOverrides = {}): Scenario {
  const service = payments({ latency: { medianMillis: 600, p99Millis: 2400 } });
  service.dedup.scope = 'global';
  service.routing = { policy: 'random', failover: 'global', detectionMillis: 2 * SECOND, pinRetries: false };
  return base('global-store', [service], {
    regions: [structuredClone(EU), structuredClone(US)],
    failures: [
      ...nodeDowns(2, 5 * SECOND, 15 * SECOND),
      {
        type: 'region_failover',
        service: 'payments',
        region: 'us-east-1',
        startOffsetMillis: 12 * SECOND,
        durationMillis: 10 * SECOND,
      },
    ],
    ...overrides,
  });
}

/**
 * Several services behind one checkout, each with its own failure mode: payments (node stores,
 * node failures, ledger downstream), orders (region store without lock, double submits, redrives
 * past the TTL), transfers (global fingerprinting store, colliding sequential keys answered
 * `mismatch`), refunds (proxy retries and a store error spike), subscriptions (cluster store,
 * decision on the SERVER span, sound).
 */
export function mixed(overrides: ScenarioOverrides = {}): Scenario {
  const durationMillis = overrides.durationMillis ?? 90 * SECOND;
  const paymentsService = payments({ weight: 3, downstream: ledger() });
  const orders = payments({
    name: 'orders',
    address: 'orders.internal',
    route: '/orders',
    weight: 2,
    latency: { medianMillis: 500, p99Millis: 2400 },
    client: {
      timeoutMillis: 2 * SECOND,
      maxAttempts: 1,
      backoffMillis: 200,
      redriveAfterMillis: 45 * SECOND,
    },
    doubleSubmitFraction: 0.03,
  });
  orders.dedup = { ...orders.dedup, scope: 'region', inFlightLock: false, keyTtlMillis: 30 * SECOND };
  const transfers = payments({
    name: 'transfers',
    address: 'transfers.internal',
    route: '/transfers',
    latency: { medianMillis: 300, p99Millis: 900 },
    keyFormat: 'sequence',
    keyCollisionFraction: 0.05,
  });
  // Fingerprinting turns the colliding tenant's replay into a 422 `mismatch`.
  transfers.dedup = { ...transfers.dedup, scope: 'global', recordStoreId: false, fingerprintsPayload: true };
  const refunds = payments({
    name: 'refunds',
    address: 'refunds.internal',
    route: '/refunds',
    latency: { medianMillis: 400, p99Millis: 1500 },
    client: { timeoutMillis: 3 * SECOND, maxAttempts: 2, backoffMillis: 200 },
    proxy: { address: '10.0.0.10', perTryTimeoutMillis: SECOND, maxTries: 2, retryOn5xx: true },
  });
  const subscriptions = payments({
    name: 'subscriptions',
    address: 'subscriptions.internal',
    route: '/subscriptions',
    latency: { medianMillis: 900, p99Millis: 2400 },
  });
  subscriptions.dedup = { ...subscriptions.dedup, scope: 'cluster', decisionOn: 'server_span' };
  const failures: FailureSpec[] = [];
  for (let offset = 15 * SECOND; offset + 10 * SECOND < durationMillis; offset += 40 * SECOND) {
    failures.push({
      type: 'node_down',
      service: 'payments',
      startOffsetMillis: offset,
      durationMillis: 8 * SECOND,
    });
    failures.push({
      type: 'node_down',
      service: 'subscriptions',
      startOffsetMillis: offset + 10 * SECOND,
      durationMillis: 8 * SECOND,
    });
    failures.push({
      type: 'error_spike',
      service: 'refunds',
      startOffsetMillis: offset + 20 * SECOND,
      durationMillis: 10 * SECOND,
      errorRate: 0.5,
    });
  }
  return base('mixed', [paymentsService, orders, transfers, refunds, subscriptions], {
    requests: 2000,
    durationMillis,
    failures,
    ...overrides,
  });
}

/**
 * The mixed workload sized by span count: exactly `spans` spans (about 20% carrying keys), at
 * about 100 mutations per simulated second, with a node failure, a failover and an error spike
 * every 40 simulated seconds.
 */
export function benchmark(options: { spans: number } & ScenarioOverrides): Scenario {
  const { spans, ...overrides } = options;
  // A mutation and its share of ordinary traffic come to 15–20 spans, so spans / 8 requests are
  // more than enough: the span budget, not the request count, ends the run.
  const requests = Math.max(1, Math.ceil(spans / 8));
  const durationMillis = Math.max(60 * SECOND, requests * 10);
  return {
    ...mixed({ durationMillis, requests }),
    name: 'benchmark',
    spanBudget: spans,
    ...overrides,
  };
}
