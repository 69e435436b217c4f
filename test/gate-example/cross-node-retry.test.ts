import { type RunningReceivers, resolveServeConfig, silentLogger, startReceivers } from '@keyscope/analyzer';
import { defaultMapping, extractAttempts } from '@keyscope/attempts';
import { createDetector, type Finding } from '@keyscope/detector';
import {
  createMemoryDedupStore,
  dedupMode,
  type Effect,
  IdempotencyScopeError,
  placementFromResource,
  type ScopeConfig,
  verify,
} from '@keyscope/gate';
import type { Span } from '@keyscope/otlp';
import { RecordingConsumer } from '@keyscope/testkit';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type CardNetwork, createCardNetwork, ProcessorUnavailableError } from './card-network.ts';
import { type CheckoutClient, createCheckoutClient } from './checkout-client.ts';
import { type PaymentsNode, startPaymentsNode } from './payments-service.ts';

const NODE_A = {
  'service.name': 'payments',
  'service.instance.id': 'payments-a-1',
  'k8s.cluster.name': 'eu-1',
  'cloud.region': 'eu-west-1',
};
const NODE_B = { ...NODE_A, 'service.instance.id': 'payments-a-2' };
const PAYMENT = { amount: 4200, card: 'tok_visa' };

// The client gives up after 200 ms; the first charge takes 600 ms, at the tail (docs/design.md's 2 s
// retry timeout against a 1.8 s p99, scaled down), later ones 10 ms.
const TIMEOUT_MILLIS = 200;
const CARD_LATENCIES_MILLIS = [600, 10];

/**
 * What the payments team declared: node-local stores, and retries that stay on the node — they
 * believed the balancer's sticky sessions pinned each client. That passes verify(), by scope.
 */
const BELIEVED_RETRY_SCOPE = { level: 'node' } as const;

let serve: RunningReceivers;
let received: RecordingConsumer;
const cleanups: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  received = new RecordingConsumer();
  const config = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    shutdown: { drainTimeoutMillis: 1_000 },
  });
  serve = await startReceivers(config, { consumer: received, logger: silentLogger });
  cleanups.push(() => serve.stop());
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Deployment {
  nodeA: PaymentsNode;
  nodeB: PaymentsNode;
  client: CheckoutClient;
  cardNetwork: CardNetwork;
  /** Waits for abandoned requests, exports every span to keyscope, and returns what it received. */
  exportedSpans(): Promise<Span[]>;
}

/** Two payments nodes and a checkout client, each exporting through the real OTLP/HTTP exporter. */
async function deploy(
  stores: { a: ReturnType<typeof createMemoryDedupStore>; b: typeof stores.a },
  scope: {
    keyScope: ScopeConfig['keyScope'];
    retryScope: ScopeConfig['retryScope'];
  },
  options: { cardNetwork?: CardNetwork; effectOfError?: (error: unknown) => Effect } = {},
): Promise<Deployment> {
  const url = `http://127.0.0.1:${serve.addresses.otlpHttp.port}/v1/traces`;
  const processor = () => new BatchSpanProcessor(new OTLPTraceExporter({ url }));
  const cardNetwork = options.cardNetwork ?? createCardNetwork(CARD_LATENCIES_MILLIS);
  const effect = options.effectOfError === undefined ? {} : { effectOfError: options.effectOfError };
  const nodeA = await startPaymentsNode({
    resource: NODE_A,
    spanProcessor: processor(),
    store: stores.a,
    cardNetwork,
    ...scope,
    ...effect,
  });
  const nodeB = await startPaymentsNode({
    resource: NODE_B,
    spanProcessor: processor(),
    store: stores.b,
    cardNetwork,
    ...scope,
    ...effect,
  });
  const client = createCheckoutClient({
    spanProcessor: processor(),
    timeoutMillis: TIMEOUT_MILLIS,
    backoffMillis: CARD_LATENCIES_MILLIS[0]! + 100,
  });
  cleanups.push(
    () => nodeA.app.close(),
    () => nodeB.app.close(),
    () => nodeA.provider.shutdown(),
    () => nodeB.provider.shutdown(),
    () => client.provider.shutdown(),
  );
  return {
    nodeA,
    nodeB,
    client,
    cardNetwork,
    async exportedSpans() {
      await client.settled();
      await Promise.all([nodeA.provider, nodeB.provider, client.provider].map((p) => p.forceFlush()));
      return received.spans();
    },
  };
}

/** keyscope's stages, in-process: spans → attempts → detector. */
function findingsFor(key: string, spans: Span[]): Finding[] {
  const detector = createDetector();
  detector.ingest(extractAttempts(spans, defaultMapping()));
  detector.flush();
  return detector.findings().filter((finding) => finding.key === key);
}

describe('payments behind a failover, with node-scoped dedup stores', () => {
  it('charges twice when the retry fails over to the other node, and keyscope reports one cross_store_duplicate', async () => {
    const { nodeA, nodeB, client, cardNetwork, exportedSpans } = await deploy(
      { a: createMemoryDedupStore(), b: createMemoryDedupStore() },
      { keyScope: 'node', retryScope: BELIEVED_RETRY_SCOPE },
    );

    const sends = await client.pay('order-7781', PAYMENT, [nodeA, nodeB]);
    expect(sends).toEqual([
      { node: 'payments-a-1', statusCode: 0, replayed: false },
      { node: 'payments-a-2', statusCode: 201, replayed: false },
    ]);

    const spans = await exportedSpans();
    expect(cardNetwork.charges.map((charge) => charge.node).sort()).toEqual(['payments-a-1', 'payments-a-2']);
    const gated = spans.filter((span) => span.attributes['idempotency.outcome'] !== undefined);
    expect(gated.map((span) => span.attributes['idempotency.outcome'])).toEqual(['miss', 'miss']);

    const findings = findingsFor('order-7781', spans);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      class: 'cross_store_duplicate',
      severity: 'critical',
      service: 'payments',
      operation: '/payments',
      stores: ['payments/node:payments-a-1', 'payments/node:payments-a-2'],
      nodes: ['payments-a-1', 'payments-a-2'],
      executions: 2,
      retriedBy: 'client',
    });
    expect(findings[0]!.routing.affinityBroken).toBe(true);
  });

  it('would have been refused at startup: verify() throws once the retry scope names both nodes', () => {
    const placement = placementFromResource(NODE_A);
    const bothNodes: ScopeConfig = {
      placement,
      keyScope: 'node',
      retryScope: {
        endpoints: [
          { node: 'payments-a-1', cluster: 'eu-1', region: 'eu-west-1' },
          { node: 'payments-a-2', cluster: 'eu-1', region: 'eu-west-1' },
        ],
      },
    };
    expect(verify({ ...bothNodes, retryScope: BELIEVED_RETRY_SCOPE })).toBe('scope');

    expect(() => verify(bothNodes)).toThrow(IdempotencyScopeError);
    expect(() => verify(bothNodes)).toThrow(
      expect.objectContaining({ code: 'KS_GATE_SCOPE_NOT_COVERED', smallestCoveringLevel: 'cluster' }),
    );
    expect(dedupMode(bothNodes)).toBeNull();
    // Sticky sessions are best effort: they break exactly at failover, so they do not count.
    expect(() => verify({ ...bothNodes, pinning: 'best_effort' })).toThrow(IdempotencyScopeError);

    expect(verify({ ...bothNodes, keyScope: 'cluster' })).toBe('scope');
    expect(verify({ ...bothNodes, pinning: 'enforced' })).toBe('pinned');
  });

  it('charges once with one cluster-scoped store: the retry waits (409), then gets the replay, and keyscope finds nothing', async () => {
    const clusterStore = createMemoryDedupStore();
    const { nodeA, nodeB, client, cardNetwork, exportedSpans } = await deploy(
      { a: clusterStore, b: clusterStore },
      {
        keyScope: 'cluster',
        retryScope: {
          endpoints: [
            { node: 'payments-a-1', cluster: 'eu-1', region: 'eu-west-1' },
            { node: 'payments-a-2', cluster: 'eu-1', region: 'eu-west-1' },
          ],
        },
      },
    );

    const sends = await client.pay('order-7782', PAYMENT, [nodeA, nodeB, nodeB]);
    expect(sends).toEqual([
      { node: 'payments-a-1', statusCode: 0, replayed: false },
      { node: 'payments-a-2', statusCode: 409, replayed: false },
      { node: 'payments-a-2', statusCode: 201, replayed: true },
    ]);

    const spans = await exportedSpans();
    expect(cardNetwork.charges).toHaveLength(1);
    const gated = spans.filter((span) => span.attributes['idempotency.outcome'] !== undefined);
    expect(gated.map((span) => span.attributes['idempotency.store'])).toEqual([
      'payments/cluster:eu-1',
      'payments/cluster:eu-1',
      'payments/cluster:eu-1',
    ]);
    expect(findingsFor('order-7782', spans)).toEqual([]);
  });
});

describe('payments whose first node fails before the charge and releases the key', () => {
  const unavailableOnA = () => createCardNetwork([10], { unavailableFor: 'payments-a-1' });
  const beforeTheCharge = (error: unknown): Effect =>
    error instanceof ProcessorUnavailableError ? 'none' : 'unknown';

  it('charges once, and keyscope reports the retry’s second store as a scope violation, not a duplicate', async () => {
    const cardNetwork = unavailableOnA();
    const { nodeA, nodeB, client, exportedSpans } = await deploy(
      { a: createMemoryDedupStore(), b: createMemoryDedupStore() },
      { keyScope: 'node', retryScope: BELIEVED_RETRY_SCOPE },
      { cardNetwork, effectOfError: beforeTheCharge },
    );
    const sends = await client.pay('order-7790', PAYMENT, [nodeA, nodeB]);
    expect(sends.map((send) => [send.node, send.statusCode])).toEqual([
      ['payments-a-1', 500],
      ['payments-a-2', 201],
    ]);
    const spans = await exportedSpans();
    expect(cardNetwork.charges.map((charge) => charge.node)).toEqual(['payments-a-2']);
    const gated = spans.filter((span) => span.attributes['idempotency.outcome'] !== undefined);
    expect(gated.map((span) => span.attributes['idempotency.effect'])).toEqual(['none', 'committed']);

    const findings = findingsFor('order-7790', spans);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      class: 'scope_violation',
      severity: 'warning',
      executions: 1,
      stores: ['payments/node:payments-a-1', 'payments/node:payments-a-2'],
    });
  });

  it('is a suspected duplicate, high and not critical, when the service cannot say how far it got', async () => {
    const { nodeA, nodeB, client, exportedSpans } = await deploy(
      { a: createMemoryDedupStore(), b: createMemoryDedupStore() },
      { keyScope: 'node', retryScope: BELIEVED_RETRY_SCOPE },
      { cardNetwork: unavailableOnA() },
    );
    await client.pay('order-7791', PAYMENT, [nodeA, nodeB]);
    const findings = findingsFor('order-7791', await exportedSpans());
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ class: 'suspected_duplicate', severity: 'high', executions: 2 });
  });
});
