import type { HaproxyPlan } from './haproxy-proxy.ts';
import type { ProxyPlan } from './nginx-proxy.ts';

/**
 * A failure the recorder injects, `atMillis` after the traffic starts, or when the failure before
 * it in its scenario has ended if that is later:
 * - `kill`: SIGKILL the node, start it again `durationMillis` later (its memory store is gone).
 *   With `stallBeforeMillis`, the node first hangs for that long after each charge, answering
 *   nothing — a stuck disk under the receipt write, until the liveness probe's kill;
 * - `brownout`: requests reaching the node for `durationMillis` wait `addedMillis` more;
 * - `partition`: the relay between the proxy and the node drops every byte, both ways, for
 *   `durationMillis`.
 */
export interface FailureSpec {
  readonly type: 'kill' | 'brownout' | 'partition';
  readonly node: string;
  readonly atMillis: number;
  readonly durationMillis: number;
  readonly addedMillis?: number;
  readonly stallBeforeMillis?: number;
}

export interface TrafficSpec {
  readonly durationMillis: number;
  /** Payments per second, over all nodes: about 10 per node. */
  readonly ratePerSecond: number;
  readonly timeoutMillis: number;
  readonly maxSends: number;
  readonly backoffBaseMillis: number;
}

/**
 * Where a payments node records the gate's decision: on the HTTP instrumentation's SERVER span, or
 * on an INTERNAL `idempotency.check` span, its child, that lasts as long as the store's answer.
 */
export type DecisionSpan = 'server' | 'child';

/**
 * Whose dedup store admits a key: each node's own, in its memory (gone with a kill), or one SQLite
 * file every node of the cluster opens, declared `keyScope: 'cluster'` with one store id.
 */
export type StoreScope = 'node' | 'cluster';

export interface Scenario {
  readonly name: string;
  readonly description: string;
  /** `service.instance.id` of each payments node. */
  readonly nodes: readonly string[];
  readonly proxy: ProxyPlan | HaproxyPlan;
  /** How long the store replays a completed key. */
  readonly ttlMillis: number;
  readonly storeScope: StoreScope;
  readonly decisionSpan: DecisionSpan;
  readonly traffic: TrafficSpec;
  readonly failures: readonly FailureSpec[];
}

const DAY_MILLIS = 24 * 3600_000;
/** What the first six scenarios share: a node store each, the decision on the SERVER span. */
const NODE_STORE = { storeScope: 'node', decisionSpan: 'server' } as const;
const THREE_NODES = ['payments-a', 'payments-b', 'payments-c'];
const TRAFFIC: TrafficSpec = {
  durationMillis: 40_000,
  ratePerSecond: 30,
  timeoutMillis: 2000,
  maxSends: 4,
  backoffBaseMillis: 200,
};
const HAPROXY: HaproxyPlan = {
  kind: 'haproxy',
  balance: 'key_hash',
  connectTimeoutMillis: 1000,
  serverTimeoutMillis: 10_000,
  retries: 1,
  redispatch: true,
  healthCheck: { path: '/healthz', intervalMillis: 500, fall: 2, rise: 2 },
};
const PROXY: ProxyPlan = {
  kind: 'nginx',
  balance: 'round_robin',
  retryPosts: false,
  readTimeoutMillis: 10_000,
  maxFails: 1,
};

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'node-killed-behind-proxy',
    description:
      'Keys stick to a node (hash of the key); payments-b hangs after charging for 3 s, then is SIGKILLed: its in-flight POSTs get 502 from nginx and their retries run on another node, while its unexported spans die with it.',
    nodes: THREE_NODES,
    proxy: { ...PROXY, balance: 'key_hash' },
    ttlMillis: DAY_MILLIS,
    ...NODE_STORE,
    traffic: TRAFFIC,
    failures: [
      { type: 'kill', node: 'payments-b', atMillis: 15_000, durationMillis: 10_000, stallBeforeMillis: 3000 },
    ],
  },
  {
    name: 'brownout-round-robin',
    description:
      'Round robin; payments-b answers 3 s slower for 15 s: the client times out at 2 s and its retry executes on the next node while payments-b still charges.',
    nodes: THREE_NODES,
    proxy: PROXY,
    ttlMillis: DAY_MILLIS,
    ...NODE_STORE,
    traffic: TRAFFIC,
    failures: [
      { type: 'brownout', node: 'payments-b', atMillis: 10_000, durationMillis: 15_000, addedMillis: 3000 },
    ],
  },
  {
    name: 'brownout-short-ttl',
    description:
      'Keys stick to a node and keys live 500 ms; payments-a answers 2.5 s slower for 15 s: retries come back to it after the slow first execution completed and its key expired, and execute again in the same store.',
    nodes: ['payments-a', 'payments-b'],
    proxy: { ...PROXY, balance: 'key_hash' },
    ttlMillis: 500,
    ...NODE_STORE,
    traffic: { ...TRAFFIC, ratePerSecond: 20, timeoutMillis: 1500, maxSends: 5, backoffBaseMillis: 300 },
    failures: [
      { type: 'brownout', node: 'payments-a', atMillis: 10_000, durationMillis: 15_000, addedMillis: 2500 },
    ],
  },
  {
    name: 'partition',
    description:
      'Round robin through a TCP relay per node; the path to payments-c drops every byte for 8 s: requests it was executing are charged but never answered, and their retries execute elsewhere.',
    nodes: THREE_NODES,
    proxy: PROXY,
    ttlMillis: DAY_MILLIS,
    ...NODE_STORE,
    traffic: TRAFFIC,
    failures: [{ type: 'partition', node: 'payments-c', atMillis: 12_000, durationMillis: 8000 }],
  },
  {
    name: 'two-failovers',
    description:
      'Keys stick to a node; payments-a hangs for 2 s, is SIGKILLed and restarted, then payments-c does the same.',
    nodes: THREE_NODES,
    proxy: { ...PROXY, balance: 'key_hash' },
    ttlMillis: DAY_MILLIS,
    ...NODE_STORE,
    traffic: { ...TRAFFIC, durationMillis: 60_000 },
    failures: [
      { type: 'kill', node: 'payments-a', atMillis: 10_000, durationMillis: 5000, stallBeforeMillis: 2000 },
      { type: 'kill', node: 'payments-c', atMillis: 32_000, durationMillis: 5000, stallBeforeMillis: 2000 },
    ],
  },
  {
    name: 'proxy-retries-posts',
    description:
      'Round robin with `proxy_next_upstream error timeout non_idempotent` and a 1.5 s read timeout: nginx re-sends a slow POST to the next node; payments-b answers 2 s slower for 12 s.',
    nodes: THREE_NODES,
    // Leaving a node out after read timeouts would leave none: the slow tail times out somewhere every second.
    proxy: { ...PROXY, retryPosts: true, readTimeoutMillis: 1500, maxFails: 0 },
    ttlMillis: DAY_MILLIS,
    ...NODE_STORE,
    traffic: { ...TRAFFIC, timeoutMillis: 4000 },
    failures: [
      { type: 'brownout', node: 'payments-b', atMillis: 10_000, durationMillis: 12_000, addedMillis: 2000 },
    ],
  },
  {
    name: 'haproxy-node-killed',
    description:
      'HAProxy instead of nginx: keys stick to a node (a consistent hash of the Idempotency-Key header), HTTP health checks every 500 ms, one retry, redispatch; the decision on an idempotency.check child span. payments-b hangs after charging for 3 s, then is SIGKILLed and restarted 10 s later: HAProxy closes the client connections of most of its in-flight POSTs with no response (a 502 for the first request of a connection), and redispatches the requests that meet its refused connection before the health checks take it out.',
    nodes: THREE_NODES,
    proxy: HAPROXY,
    ttlMillis: DAY_MILLIS,
    storeScope: 'node',
    decisionSpan: 'child',
    traffic: TRAFFIC,
    failures: [
      { type: 'kill', node: 'payments-b', atMillis: 15_000, durationMillis: 10_000, stallBeforeMillis: 3000 },
    ],
  },
  {
    name: 'cluster-store-short-ttl',
    description:
      'Round robin over three nodes that share one dedup store (one SQLite file, key scope cluster) whose keys live 500 ms; the decision on an idempotency.check child span. payments-a answers 2.5 s slower for 20 s (client timeout 1.5 s): a retry on another node gets 409 while the first execution runs, and executes again in the same store once the completed key expired.',
    nodes: THREE_NODES,
    proxy: PROXY,
    ttlMillis: 500,
    storeScope: 'cluster',
    decisionSpan: 'child',
    // 33 s at 30 payments/s keep the recording under 5 MiB of OTLP/JSON, what one Kafka partition of
    // test/kafka's mock broker holds; the longer backoff sends fewer 409s while the first execution runs.
    traffic: {
      ...TRAFFIC,
      durationMillis: 33_000,
      timeoutMillis: 1500,
      maxSends: 5,
      backoffBaseMillis: 500,
    },
    failures: [
      { type: 'brownout', node: 'payments-a', atMillis: 10_000, durationMillis: 20_000, addedMillis: 2500 },
    ],
  },
];

export function scenarioNamed(name: string): Scenario {
  const scenario = SCENARIOS.find((candidate) => candidate.name === name);
  if (scenario === undefined) {
    throw new Error(`unknown scenario '${name}'; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
  }
  return scenario;
}
