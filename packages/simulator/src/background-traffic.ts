import type { Span } from '@keyscope/otlp';
import { routeRequest } from './load-balancer.ts';
import type { RoutingSpec } from './scenario.ts';
import {
  networkDelayMillis,
  pickLiveNode,
  publicAddress,
  SERVICE_USER_AGENT,
  type SimContext,
  userAgent,
} from './sim-context.ts';
import { clientSpan, databaseSpan, internalSpan, serverSpan } from './span-builder.ts';
import type { SimService } from './topology.ts';

/**
 * Ordinary traffic without idempotency keys: what most spans are. It goes through the same load
 * balancing and failures as mutations, so a failed node's silence and an error spike show in it.
 */

const CALLER_PAGES = ['/cart', '/products/:id', '/account'];
/** Reads per service fail faster than mutations give up: GET clients use a short timeout. */
const READ_TIMEOUT_MILLIS = 1500;

/** One user GET: served by the caller alone, or by a read from one of the services. */
export function simulateBackgroundRequest(ctx: SimContext, startUnixMillis: number): Span[] {
  const { rng, topology, scenario } = ctx;
  const spans: Span[] = [];
  const caller = topology.caller;
  const callerNode = pickLiveNode(ctx, caller, startUnixMillis);
  const traceId = rng.hex(32);
  const rootSpanId = rng.hex(16);
  const remote = rng.chance(0.75);
  const page = remote ? '/orders/:id' : rng.pick(CALLER_PAGES);
  const path = page.replace(':id', rng.hex(8));
  let end: number;
  let status = rng.chance(scenario.backgroundErrorRate) ? 500 : 200;

  if (!remote) {
    const renderStart = startUnixMillis + rng.between(0.5, 3);
    const renderEnd = renderStart + rng.logNormal(8, 60);
    spans.push(
      internalSpan(
        {
          traceId,
          spanId: rng.hex(16),
          parentSpanId: rootSpanId,
          node: callerNode,
          startUnixMillis: renderStart,
          endUnixMillis: renderEnd,
        },
        `render ${page}`,
        caller.appScope,
        { 'template.name': page.slice(1).replace('/:id', ''), 'cache.hit': rng.chance(0.6) },
      ),
    );
    end = renderEnd + rng.between(0.5, 2);
  } else {
    const target = rng.pick(topology.readTargets);
    const result = read(
      ctx,
      target,
      callerNode,
      traceId,
      rootSpanId,
      startUnixMillis + rng.between(0.5, 3),
      spans,
    );
    end = result.endUnixMillis + rng.between(0.5, 2);
    if (result.statusCode === undefined) status = 504;
    else if (result.statusCode >= 500) status = 502;
  }
  spans.unshift(
    serverSpan({
      traceId,
      spanId: rootSpanId,
      parentSpanId: '',
      node: callerNode,
      startUnixMillis,
      endUnixMillis: end,
      method: 'GET',
      route: page,
      path,
      serverAddress: scenario.caller.address,
      serverPort: 443,
      clientAddress: publicAddress(ctx),
      userAgent: userAgent(ctx),
      statusCode: status,
      errorMessage: 'upstream request failed',
    }),
  );
  return spans;
}

/** What a service's read path looks like; derived once per service, not per request. */
interface ReadEndpoint {
  /** Reads are not sticky: any healthy node serves them. */
  routing: RoutingSpec;
  route: string;
  table: string;
  /** Database host per region. */
  databaseAddress: Map<string, string>;
}

const readEndpoints = new WeakMap<SimService, ReadEndpoint>();

function readEndpoint(service: SimService): ReadEndpoint {
  let endpoint = readEndpoints.get(service);
  if (!endpoint) {
    const spec = service.spec!;
    endpoint = {
      routing: { ...spec.routing, policy: 'random', pinRetries: false },
      route: `${spec.route}/:id`,
      table: spec.name.replace(/-/g, '_'),
      databaseAddress: new Map(service.nodes.map((n) => [n.region, `${spec.name}-db.${n.region}.internal`])),
    };
    readEndpoints.set(service, endpoint);
  }
  return endpoint;
}

/** The caller reads from a service: CLIENT span, and if the node answers, SERVER + database spans. */
function read(
  ctx: SimContext,
  service: SimService,
  from: ReturnType<typeof pickLiveNode>,
  traceId: string,
  parentSpanId: string,
  t: number,
  spans: Span[],
): { endUnixMillis: number; statusCode: number | undefined } {
  const { rng, schedule, scenario } = ctx;
  const spec = service.spec!;
  const endpoint = readEndpoint(service);
  const route = routeRequest(
    { service, routing: endpoint.routing, from, atUnixMillis: t, session: 0 },
    ctx.topology,
    schedule,
    rng,
  );
  const node = route.node;
  const path = `${spec.route}/${rng.hex(12)}`;
  const clientSpanId = rng.hex(16);
  const arrive = t + networkDelayMillis(ctx, from, node);
  let statusCode: number | undefined;
  let end = t + READ_TIMEOUT_MILLIS;

  if (!schedule.outageAt(node, arrive)) {
    const spike = schedule.spikeAt(node, arrive);
    const failed = spike ? rng.chance(spike.errorRate) : rng.chance(scenario.backgroundErrorRate);
    const queryStart = arrive + rng.between(0.3, 2);
    const queryEnd = queryStart + rng.logNormal(3, 40);
    const slowdown = schedule.brownoutAt(node, arrive)?.slowdownMillis ?? 0;
    const serverEnd = (failed ? arrive + rng.between(2, 30) : queryEnd + rng.between(0.5, 5)) + slowdown;
    const lost = schedule.outageBeginningIn(node, arrive, serverEnd);
    if (!lost || scenario.inFlightSpansOnFailure === 'emitted') {
      const serverSpanId = rng.hex(16);
      spans.push(
        serverSpan({
          traceId,
          spanId: serverSpanId,
          parentSpanId: clientSpanId,
          node,
          startUnixMillis: arrive,
          endUnixMillis: serverEnd,
          method: 'GET',
          route: endpoint.route,
          path,
          serverAddress: spec.address,
          serverPort: spec.port,
          clientAddress: from.ip,
          userAgent: SERVICE_USER_AGENT,
          statusCode: failed ? (spike ? 503 : 500) : 200,
          errorMessage: spike ? 'service unavailable' : 'internal error',
        }),
      );
      if (!failed) {
        spans.push(
          databaseSpan({
            traceId,
            spanId: rng.hex(16),
            parentSpanId: serverSpanId,
            node,
            startUnixMillis: queryStart,
            endUnixMillis: queryEnd,
            database: spec.name,
            table: endpoint.table,
            serverAddress: endpoint.databaseAddress.get(node.region)!,
            peerAddress: node.databaseIp,
            rows: 1,
          }),
        );
      }
    }
    const received = serverEnd + networkDelayMillis(ctx, node, from);
    if (!lost && received < t + READ_TIMEOUT_MILLIS) {
      statusCode = failed ? (spike ? 503 : 500) : 200;
      end = received;
    }
  }
  spans.push(
    clientSpan({
      traceId,
      spanId: clientSpanId,
      parentSpanId,
      node: from,
      startUnixMillis: t,
      endUnixMillis: end,
      method: 'GET',
      url: `https://${spec.address}:${spec.port}${path}`,
      serverAddress: spec.address,
      serverPort: spec.port,
      peerAddress: node.ip,
      resendCount: 0,
      statusCode,
      errorType: statusCode === undefined ? 'timeout' : statusCode >= 400 ? String(statusCode) : undefined,
      timeoutMillis: READ_TIMEOUT_MILLIS,
    }),
  );
  return { endUnixMillis: end, statusCode };
}

/** A kubelet probe: the one-span unit that pads a run to an exact span budget. */
export function simulateHealthCheck(ctx: SimContext, t: number): Span {
  const { rng, topology } = ctx;
  const services = [...topology.services.values()];
  const node = pickLiveNode(ctx, rng.pick(services), t);
  return serverSpan({
    traceId: rng.hex(32),
    spanId: rng.hex(16),
    parentSpanId: '',
    node,
    startUnixMillis: t,
    endUnixMillis: t + rng.between(0.1, 0.8),
    method: 'GET',
    route: '/healthz',
    path: '/healthz',
    serverAddress: node.ip,
    serverPort: 8080,
    clientAddress: `${node.ip.split('.').slice(0, 3).join('.')}.1`,
    userAgent: 'kube-probe/1.31',
    statusCode: 200,
  });
}
