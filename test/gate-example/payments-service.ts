import {
  createIdempotencyGate,
  type DedupStore,
  type Effect,
  idempotencyPlugin,
  placementFromResource,
  type RetryScope,
  type ScopeLevel,
} from '@keyscope/gate';
import { defaultTextMapGetter, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { CardNetwork } from './card-network.ts';

export interface PaymentsNodeOptions {
  /** Resource attributes: `service.instance.id`, `k8s.cluster.name`, `cloud.region` place the node. */
  readonly resource: Readonly<Record<string, string>>;
  /** Where this node's spans go (each node has its own tracer provider, as separate processes would). */
  readonly spanProcessor: SpanProcessor;
  readonly store: DedupStore;
  readonly keyScope: ScopeLevel;
  /** What the team declared its clients' retries can reach. */
  readonly retryScope: RetryScope;
  readonly cardNetwork: CardNetwork;
  /** The plugin's `effectOfError`: how far a request that threw got. Default: the plugin's. */
  readonly effectOfError?: (error: unknown) => Effect;
}

export interface PaymentsNode {
  readonly name: string;
  readonly app: FastifyInstance;
  readonly provider: BasicTracerProvider;
}

const propagator = new W3CTraceContextPropagator();

/**
 * The example service: `POST /payments` charges a card once per Idempotency-Key, guarded by the
 * gate. It opens its own SERVER span per request (standing in for the HTTP instrumentation,
 * which cannot tell two tracer providers in one process apart) and lets the gate record on it.
 */
export async function startPaymentsNode(options: PaymentsNodeOptions): Promise<PaymentsNode> {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(options.resource),
    spanProcessors: [options.spanProcessor],
  });
  const tracer = provider.getTracer('payments');
  const placement = placementFromResource(options.resource);
  const gate = createIdempotencyGate({
    store: options.store,
    scope: { placement, keyScope: options.keyScope, retryScope: options.retryScope },
  });

  const app = Fastify();
  const spans = new WeakMap<FastifyRequest, Span>();
  app.addHook('onRequest', async (request) => {
    const parent = propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
    const route = request.routeOptions.url ?? request.url;
    const span = tracer.startSpan(
      `${request.method} ${route}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url },
      },
      parent,
    );
    spans.set(request, span);
  });
  app.addHook('onResponse', async (request, reply) => {
    const span = spans.get(request);
    if (span === undefined) return;
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  await app.register(idempotencyPlugin, {
    gate,
    spanOf: (request) => spans.get(request),
    ...(options.effectOfError === undefined ? {} : { effectOfError: options.effectOfError }),
  });

  app.post<{ Body: { amount: number; card: string } }>(
    '/payments',
    { config: { idempotency: 'required' } },
    async (request, reply) => {
      const charge = await options.cardNetwork.charge(request.body.amount, request.body.card, placement.node);
      return reply.code(201).header('location', `/payments/${charge.id}`).send(charge);
    },
  );
  await app.ready();
  return { name: placement.node, app, provider };
}
