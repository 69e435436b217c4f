import type { Span } from '@keyscope/otlp';
import { type DedupOutcome, type KeyRecord, KeyStores, storeIdFor } from './dedup-store.ts';
import type { ScheduledFailure } from './failure-schedule.ts';
import { headSample } from './head-sampling.ts';
import { routeRequest } from './load-balancer.ts';
import type { ClientSpec, ProxySpec, ServiceSpec } from './scenario.ts';
import {
  networkDelayMillis,
  pickLiveNode,
  publicAddress,
  SERVICE_USER_AGENT,
  type SimContext,
  userAgent,
} from './sim-context.ts';
import {
  clientSpan,
  type DecisionAttributes,
  decisionSpan,
  internalSpan,
  micros,
  serverSpan,
  sideEffectSpan,
} from './span-builder.ts';
import { TimeQueue } from './time-queue.ts';
import type { FrontService, SimNode, SimService } from './topology.ts';
import type { KeyHistory, StoreVisit, TouchingEvent } from './truth.ts';

export interface FlowResult {
  spans: Span[];
  /** Spans head sampling dropped (`Scenario.sampling`). */
  sampledOut: Span[];
  history: KeyHistory;
}

/**
 * Simulates everything that happens to one idempotency key: the user's submission with its
 * client retries, proxy retries, a concurrent double submit, another tenant reusing the key, a
 * redrive long after, and the downstream calls each execution makes. It is a small discrete-event
 * simulation, because attempts of one key overlap (a timed-out attempt still runs while its retry
 * arrives) and the store's answer depends on that order. Keys never share store state, so each
 * flow runs to completion on its own.
 */
export function simulateMutationFlow(ctx: SimContext, index: number, startUnixMillis: number): FlowResult {
  return new MutationFlow(ctx, index, startUnixMillis).run();
}

/** One side of an edge: who calls which service, and how it retries. */
interface Edge {
  target: SimService;
  spec: ServiceSpec;
  client: ClientSpec;
  proxy: ProxySpec | undefined;
}

/** A logical call with its resends: a user submission, or an execution's downstream call. */
interface CallSeries {
  edge: Edge;
  from: SimNode;
  traceId: string;
  parentSpanId: string;
  tenant: string;
  payload: string;
  /** `http.request.resend_count` of this series' first send (a redrive continues the count). */
  priorSends: number;
  sends: number;
  firstNode: SimNode | undefined;
  /** Where this series' CLIENT spans go: the flow, or the upstream request (lost with its node). */
  emit: (span: Span) => void;
  /** For downstream calls: the decision span of the upstream execution that made them. */
  upstreamSpanId: string | undefined;
  /** Nodes that refused a connection of this call: its balancer avoids them for its next sends. */
  refusedBy: Set<SimNode>;
  /** True once the call's sender is gone (its node was killed): nothing more is sent or recorded. */
  halted: () => boolean;
  onSettled: (t: number, statusCode: number | undefined) => void;
}

/** How a send fails without a response when the node's process was killed (`ProcessKillSpec`). */
type ConnectionError = 'ECONNRESET' | 'ECONNREFUSED';

interface Send {
  series: CallSeries;
  /** The series' trace, or a trace of its own when the client starts one per resend. */
  traceId: string;
  /** The CLIENT span's parent: the series', or none when the send starts its own trace. */
  parentSpanId: string;
  spanId: string;
  startUnixMillis: number;
  resendCount: number;
  peerAddress: string | undefined;
  settled: boolean;
}

interface ServerRequest {
  series: CallSeries;
  send: Send;
  service: SimService;
  spec: ServiceSpec;
  node: SimNode;
  arriveUnixMillis: number;
  /** Its store decision, as its `StoreVisit` records it. */
  decidedUnixMillis: number;
  serverSpanId: string;
  decisionSpanId: string;
  outcome: DedupOutcome;
  record: KeyRecord | undefined;
  statusCode: number;
  plannedEndUnixMillis: number;
  decision: DecisionAttributes | undefined;
  /** An admitted request that fails (an `execution_failure`): before or after its side effect. */
  failure: 'before_effect' | 'after_effect' | undefined;
  /** Spans recorded on this node for this request (decision, downstream sends): lost with it. */
  ownSpans: Span[];
  /** Its store visit, once it decided. */
  visit: StoreVisit | undefined;
  /** When its side effect (the charge, or the downstream call that makes it) takes place. */
  effectUnixMillis: number;
  /** It answered: a later kill of its node does not touch it. */
  done: boolean;
  /** A brownout slowed it: its SERVER span ends when its caller gives up, if that comes first. */
  slowed: boolean;
  /** Its node's process was killed under it: it never answers, its connection was reset. */
  killed: boolean;
  onResponse: (t: number, statusCode: number) => void;
  onConnectionError: (t: number, error: ConnectionError) => void;
}

const STATUS_BY_OUTCOME: Record<DedupOutcome, number> = {
  miss: 201,
  hit: 200,
  in_progress: 409,
  mismatch: 422,
  error: 503,
};

class MutationFlow {
  private readonly rng;
  private readonly events = new TimeQueue<() => void>();
  private readonly stores = new KeyStores();
  private readonly spans: Span[] = [];
  private readonly visits: StoreVisit[] = [];
  private readonly tenants: string[] = [];
  private readonly routingEvents: TouchingEvent[] = [];
  private readonly service: FrontService;
  private readonly key: string;
  private readonly session: number;
  private now = 0;

  constructor(
    private readonly ctx: SimContext,
    index: number,
    private readonly startUnixMillis: number,
  ) {
    this.rng = ctx.rng;
    this.service = pickByWeight(ctx, ctx.topology.front);
    this.key =
      this.service.spec.keyFormat === 'uuid' ? this.rng.uuid() : `ord-${String(index + 1).padStart(7, '0')}`;
    this.session = this.rng.uint32();
  }

  run(): FlowResult {
    const spec = this.service.spec;
    const tenant = this.rng.pick(this.ctx.scenario.tenants);
    const payload = this.payload(tenant);
    this.at(this.startUnixMillis, () => this.submit('user', tenant, payload, 0));
    if (this.rng.chance(spec.doubleSubmitFraction)) {
      const gap = this.rng.between(0, spec.doubleSubmitMaxGapMillis);
      this.at(this.startUnixMillis + gap, () => this.submit('user', tenant, payload, 0));
    }
    if (this.rng.chance(spec.keyCollisionFraction) && this.ctx.scenario.tenants.length > 1) {
      const others = this.ctx.scenario.tenants.filter((t) => t !== tenant);
      const other = this.rng.pick(others);
      const delay = this.rng.between(0.2, 1) * spec.keyCollisionMaxDelayMillis;
      this.at(this.startUnixMillis + delay, () => this.submit('user', other, this.payload(other), 0));
    }
    for (let event = this.events.pop(); event; event = this.events.pop()) event();
    // Head sampling decides on every span, exported or not (a decision propagates either way).
    const sampling = this.ctx.scenario.sampling;
    let recorded = this.spans;
    let sampledOut: Span[] = [];
    if (sampling !== undefined) ({ kept: recorded, dropped: sampledOut } = headSample(this.spans, sampling));
    // What a killed node had not exported never reaches the pipeline; truth keeps its visits.
    const spans = recorded.filter((span) => this.ctx.schedule.exported(span));
    const emitted = new Set(spans.map((span) => span.spanId));
    for (const visit of this.visits) visit.visible = emitted.has(visit.spanId);
    return {
      spans,
      sampledOut,
      history: {
        key: this.key,
        tenants: this.tenants,
        visits: this.visits,
        routingEvents: this.routingEvents,
      },
    };
  }

  private at(t: number, action: () => void): void {
    this.events.push(t, () => {
      this.now = t;
      action();
    });
  }

  private payload(tenant: string): string {
    return `${tenant}:${this.rng.hex(8)}`;
  }

  /** Records that `failure` touched the key at `atUnixMillis`, now by default (see `TouchingEvent`). */
  private noteEvent(
    failure: ScheduledFailure | undefined,
    how: TouchingEvent['how'],
    atUnixMillis = this.now,
  ): void {
    // On the visits' own clock (`micros`), so a failure met at a store decision is at its visit.
    if (failure === undefined) return;
    const event: TouchingEvent = { id: failure.event.id, how, atUnixMillis: micros(atUnixMillis) };
    if (failure.event.node !== undefined) event.node = failure.event.node;
    this.routingEvents.push(event);
  }

  /** A user request at the caller (or a redrive job) that sends the mutation with the key. */
  private submit(kind: 'user' | 'redrive', tenant: string, payload: string, priorSends: number): void {
    const ctx = this.ctx;
    const start = this.now;
    if (!this.tenants.includes(tenant)) this.tenants.push(tenant);
    const caller = ctx.topology.caller;
    const callerNode = pickLiveNode(ctx, caller, start);
    const traceId = this.rng.hex(32);
    const rootSpanId = this.rng.hex(16);
    const clientAddress = publicAddress(ctx);
    const agent = userAgent(ctx);
    const spec = this.service.spec;
    const series: CallSeries = {
      edge: { target: this.service, spec, client: spec.client, proxy: spec.proxy },
      from: callerNode,
      traceId,
      parentSpanId: rootSpanId,
      tenant,
      payload,
      priorSends,
      sends: 0,
      firstNode: undefined,
      emit: (span) => this.spans.push(span),
      upstreamSpanId: undefined,
      refusedBy: new Set(),
      halted: () => false,
      onSettled: (t, statusCode) => {
        const end = t + this.rng.between(0.5, 4);
        if (kind === 'redrive') {
          const base = {
            traceId,
            spanId: rootSpanId,
            parentSpanId: '',
            node: callerNode,
            startUnixMillis: start,
            endUnixMillis: end,
          };
          this.spans.push(
            internalSpan(base, `redrive ${this.service.name}`, caller.appScope, {
              'tenant.id': tenant,
              'job.attempt': priorSends,
            }),
          );
        } else {
          const route = ctx.scenario.caller.route;
          this.spans.push(
            serverSpan({
              traceId,
              spanId: rootSpanId,
              parentSpanId: '',
              node: callerNode,
              startUnixMillis: start,
              endUnixMillis: end,
              method: 'POST',
              route,
              path: route,
              serverAddress: ctx.scenario.caller.address,
              serverPort: 443,
              clientAddress,
              userAgent: agent,
              statusCode: callerStatus(statusCode),
              tenant,
              errorMessage: `${this.service.name} request failed`,
            }),
          );
        }
        const redriveAfter = spec.client.redriveAfterMillis;
        if (kind === 'user' && redriveAfter !== undefined && isRetryable(statusCode)) {
          const sent = series.priorSends + series.sends;
          this.at(t + redriveAfter, () => this.submit('redrive', tenant, payload, sent));
        }
      },
    };
    this.at(start + this.rng.between(1, 6), () => this.send(series));
  }

  private send(series: CallSeries): void {
    const t = this.now;
    const { edge } = series;
    // Drawn only for clients that start a trace per resend, so that other runs keep their sequence.
    const ownTrace = edge.client.retriesInNewTrace === true && series.sends > 0;
    const send: Send = {
      series,
      traceId: ownTrace ? this.rng.hex(32) : series.traceId,
      parentSpanId: ownTrace ? '' : series.parentSpanId,
      spanId: this.rng.hex(16),
      startUnixMillis: t,
      resendCount: series.priorSends + series.sends,
      peerAddress: undefined,
      settled: false,
    };
    series.sends++;
    if (edge.proxy) {
      send.peerAddress = edge.proxy.address;
      this.proxyTry(send, 0, t + this.rng.between(0.2, 1), new Set());
    } else {
      const pinned = edge.spec.routing.pinRetries && series.sends > 1 ? series.firstNode : undefined;
      const route = routeRequest(
        {
          service: edge.target,
          routing: edge.spec.routing,
          from: series.from,
          atUnixMillis: t,
          session: this.session,
          pinned,
          avoid: series.refusedBy.size > 0 ? series.refusedBy : undefined,
        },
        this.ctx.topology,
        this.ctx.schedule,
        this.rng,
      );
      this.noteEvent(route.reroutedBy, 'rerouted');
      series.firstNode ??= route.node;
      send.peerAddress = route.node.ip;
      const arrive = t + networkDelayMillis(this.ctx, series.from, route.node);
      this.deliver(
        send,
        route.node,
        arrive,
        (tr, status) => this.settleSend(send, tr, status),
        (tr, error) => {
          if (error === 'ECONNREFUSED') series.refusedBy.add(route.node);
          this.settleSend(send, tr, undefined, error);
        },
      );
    }
    const timeout = edge.client.timeoutMillis;
    this.at(t + timeout, () => this.settleSend(send, this.now, undefined));
  }

  /** An uninstrumented proxy's try: it retries POSTs on its own, to a node it has not tried. */
  private proxyTry(send: Send, tryIndex: number, t: number, tried: Set<SimNode>): void {
    this.at(t, () => {
      const { series } = send;
      const proxy = series.edge.proxy!;
      const route = routeRequest(
        {
          service: series.edge.target,
          routing: series.edge.spec.routing,
          from: series.from,
          atUnixMillis: t,
          session: this.session,
          avoid: tried,
        },
        this.ctx.topology,
        this.ctx.schedule,
        this.rng,
      );
      this.noteEvent(route.reroutedBy, 'rerouted');
      tried.add(route.node);
      let settled = false;
      const hasNext = tryIndex + 1 < proxy.maxTries;
      const forward = (tf: number, status: number): void => {
        this.at(tf + this.rng.between(0.2, 1), () => this.settleSend(send, this.now, status));
      };
      const arrive = t + networkDelayMillis(this.ctx, series.from, route.node);
      this.deliver(
        send,
        route.node,
        arrive,
        (tr, status) => {
          if (settled) return;
          settled = true;
          if (status >= 500 && proxy.retryOn5xx && hasNext) {
            this.proxyTry(send, tryIndex + 1, tr + this.rng.between(5, 25), tried);
          } else {
            forward(tr, status);
          }
        },
        // A proxy tries the next node on a connection error (nginx `proxy_next_upstream error`),
        // unless the request was forwarded and the proxy does not re-send those.
        (tr, error) => {
          if (settled) return;
          settled = true;
          const forwarded = error === 'ECONNRESET';
          if (hasNext && (!forwarded || proxy.resendsForwarded !== false))
            this.proxyTry(send, tryIndex + 1, tr, tried);
          else forward(tr, 502);
        },
      );
      this.at(t + proxy.perTryTimeoutMillis, () => {
        if (settled) return;
        settled = true;
        if (hasNext) this.proxyTry(send, tryIndex + 1, this.now, tried);
        else forward(this.now, 504);
      });
    });
  }

  /**
   * The request reaches `node` at `arrive`, unless the node is down: then it vanishes, or, when
   * the node's process was killed, its connection is refused.
   */
  private deliver(
    send: Send,
    node: SimNode,
    arrive: number,
    onResponse: (t: number, statusCode: number) => void,
    onConnectionError: (t: number, error: ConnectionError) => void,
  ): void {
    const outage = this.ctx.schedule.outageAt(node, arrive);
    if (outage) {
      this.noteEvent(outage, 'broke', arrive);
      if (outage.lastExportUnixMillis !== undefined) {
        const refusedAt = arrive + networkDelayMillis(this.ctx, node, send.series.from);
        this.at(refusedAt, () => onConnectionError(this.now, 'ECONNREFUSED'));
      }
      return;
    }
    const { series } = send;
    const request: ServerRequest = {
      series,
      send,
      service: series.edge.target,
      spec: series.edge.spec,
      node,
      arriveUnixMillis: arrive,
      decidedUnixMillis: 0,
      serverSpanId: this.rng.hex(16),
      decisionSpanId: '',
      outcome: 'miss',
      record: undefined,
      statusCode: 0,
      plannedEndUnixMillis: 0,
      decision: undefined,
      failure: undefined,
      ownSpans: [],
      visit: undefined,
      effectUnixMillis: 0,
      done: false,
      slowed: false,
      killed: false,
      onResponse,
      onConnectionError,
    };
    this.at(arrive + this.rng.between(0.2, 1), () => this.check(request));
    const kill = this.ctx.schedule.outageBeginningIn(node, arrive, Number.POSITIVE_INFINITY);
    if (kill?.lastExportUnixMillis !== undefined)
      this.at(kill.startUnixMillis, () => this.kill(request, kill));
  }

  /**
   * The node's process dies under the request: what it had recorded goes out with the rest of its
   * buffer (less what the kill loses, `FailureSchedule.exported`), its caller's connection is
   * reset, and its store record stays as it was. A kill before its side effect undoes nothing,
   * because nothing was done.
   */
  private kill(request: ServerRequest, failure: ScheduledFailure): void {
    if (request.done) return;
    request.killed = true;
    this.noteEvent(failure, 'broke', Math.max(failure.startUnixMillis, request.decidedUnixMillis));
    if (request.visit !== undefined && this.now < request.effectUnixMillis) request.visit.effect = 'none';
    for (const span of request.ownSpans) this.spans.push(span);
    const resetAt = this.now + networkDelayMillis(this.ctx, request.node, request.series.from);
    this.at(resetAt, () => request.onConnectionError(this.now, 'ECONNRESET'));
  }

  /** The dedup decision: the moment a `miss` admits the key and the side effect starts. */
  private check(request: ServerRequest): void {
    if (request.killed) return;
    const t = this.now;
    const { spec, node, series } = request;
    const dedup = spec.dedup;
    const store = storeIdFor(spec.name, dedup, node, series.tenant);
    const spike = this.ctx.schedule.spikeAt(node, t);
    let admission: StoreVisit['admission'];
    if ((spike && this.rng.chance(spike.errorRate)) || this.rng.chance(dedup.storeErrorRate)) {
      this.noteEvent(spike, 'broke');
      request.outcome = 'error';
    } else {
      const decision = this.stores.decide(`${spec.name}|${store}`, dedup, t, series.payload);
      request.outcome = decision.outcome;
      request.record = decision.record;
      admission = decision.admission;
    }
    const checkEnd =
      t + (request.outcome === 'error' ? this.rng.between(50, 250) : this.rng.between(0.3, 2.5));
    // A brownout delays the answer, whatever it is; the store decided on time.
    const brownout = this.ctx.schedule.brownoutAt(node, request.arriveUnixMillis);
    this.noteEvent(brownout, 'broke');
    const slowdown = brownout?.slowdownMillis ?? 0;
    request.slowed = slowdown > 0;
    request.statusCode = STATUS_BY_OUTCOME[request.outcome];
    if (request.outcome === 'miss') {
      // Drawn only during a failure, so that other runs keep their random sequence.
      const failing = this.ctx.schedule.executionFailureAt(node, t);
      if (failing && this.rng.chance(failing.errorRate)) {
        this.noteEvent(failing, 'broke');
        request.failure = failing.phase;
        request.statusCode = failing.phase === 'before_effect' ? 503 : 500;
      }
    }
    request.decision = {
      key: this.key,
      outcome: request.outcome,
      store: dedup.recordStoreId ? store : undefined,
      scope: dedup.scope,
      tenant: series.tenant,
    };
    const onCheckSpan = dedup.decisionOn === 'check_span';
    if (onCheckSpan) {
      request.decisionSpanId = this.rng.hex(16);
      request.ownSpans.push(
        decisionSpan({
          traceId: request.send.traceId,
          spanId: request.decisionSpanId,
          parentSpanId: request.serverSpanId,
          node,
          startUnixMillis: t,
          endUnixMillis: checkEnd,
          decision: request.decision,
          route: spec.route,
          scope: request.service.appScope,
          storeAddress: `${spec.name}-idempotency.${node.region}.internal`,
        }),
      );
    }
    const visitSpanId = onCheckSpan ? request.decisionSpanId : request.serverSpanId;
    request.decidedUnixMillis = micros(onCheckSpan ? t : request.arriveUnixMillis);
    request.effectUnixMillis = checkEnd;
    request.visit = {
      service: spec.name,
      operation: spec.route,
      store,
      node: node.instanceId,
      tenant: series.tenant,
      outcome: request.outcome,
      admission,
      effect: request.outcome === 'miss' && request.failure !== 'before_effect' ? 'committed' : 'none',
      spanId: visitSpanId,
      traceId: request.send.traceId,
      startUnixMillis: request.decidedUnixMillis,
      clientSpanId: request.send.spanId,
      upstreamSpanId: series.upstreamSpanId,
      visible: true,
    };
    this.visits.push(request.visit);

    if (request.outcome !== 'miss') {
      const end = checkEnd + this.rng.between(1, 12) + slowdown;
      this.at(end, () => this.respond(request));
      return;
    }
    if (request.failure === 'before_effect') {
      // The processor is unavailable: the request fails fast, before anything is charged.
      this.at(checkEnd + this.rng.between(5, 40) + slowdown, () => this.respond(request));
      return;
    }
    const latency = this.rng.logNormal(spec.latency.medianMillis, spec.latency.p99Millis) + slowdown;
    request.plannedEndUnixMillis = Math.max(request.arriveUnixMillis + latency, checkEnd + 1);
    if (spec.effectConvention === 'span') {
      const chargeAt = checkEnd + this.rng.between(0.1, 0.3) * (request.plannedEndUnixMillis - checkEnd);
      request.effectUnixMillis = chargeAt;
      const chargeEnd = chargeAt + Math.min(this.rng.between(2, 20), request.plannedEndUnixMillis - chargeAt);
      request.ownSpans.push(
        sideEffectSpan(
          {
            traceId: request.send.traceId,
            spanId: this.rng.hex(16),
            parentSpanId: visitSpanId,
            node,
            startUnixMillis: chargeAt,
            endUnixMillis: chargeEnd,
          },
          this.key,
          request.service.appScope,
        ),
      );
    }
    const downstream =
      request.service.role === 'mutation' ? (request.service as FrontService).downstream : undefined;
    if (!downstream) {
      this.at(request.plannedEndUnixMillis, () => this.respond(request));
      return;
    }
    // The side effect is the downstream call, made with the same key partway through the work.
    const callAt = checkEnd + this.rng.between(0.1, 0.3) * (request.plannedEndUnixMillis - checkEnd);
    request.effectUnixMillis = callAt;
    const downstreamSeries: CallSeries = {
      edge: { target: downstream, spec: downstream.spec, client: downstream.spec.client, proxy: undefined },
      from: node,
      traceId: request.send.traceId,
      parentSpanId: request.serverSpanId,
      tenant: series.tenant,
      payload: series.payload,
      priorSends: 0,
      sends: 0,
      firstNode: undefined,
      emit: (span) => request.ownSpans.push(span),
      upstreamSpanId: visitSpanId,
      refusedBy: new Set(),
      halted: () => request.killed,
      onSettled: (ts, statusCode) => {
        if (statusCode === undefined || statusCode >= 500) request.statusCode = 502;
        const end = Math.max(request.plannedEndUnixMillis, ts + this.rng.between(0.5, 3));
        this.at(end, () => this.respond(request));
      },
    };
    this.at(callAt, () => {
      if (!request.killed) this.send(downstreamSeries);
    });
  }

  /** The server finishes; the response is lost if the node failed while the request was in flight. */
  private respond(request: ServerRequest): void {
    if (request.killed) return;
    request.done = true;
    const t = this.now;
    const { node, series, spec } = request;
    const released = request.failure !== undefined && spec.dedup.releaseOnFailure === true;
    if (request.record) {
      if (released) this.stores.release(request.record, t);
      else this.stores.complete(request.record, t);
    }
    const lostBy = this.ctx.schedule.outageBeginningIn(node, request.arriveUnixMillis, t);
    const onServerSpan = spec.dedup.decisionOn === 'server_span';
    // The HTTP instrumentation ends a SERVER span when the caller's socket closes: a slowed request
    // whose caller gave up is a span of the caller's timeout (less the way there), whatever the
    // handler still did after.
    const gaveUp = request.send.startUnixMillis + series.edge.client.timeoutMillis;
    const server = serverSpan({
      traceId: request.send.traceId,
      spanId: request.serverSpanId,
      parentSpanId: request.send.spanId,
      node,
      startUnixMillis: request.arriveUnixMillis,
      endUnixMillis: request.slowed && gaveUp < t ? Math.max(request.arriveUnixMillis, gaveUp) : t,
      method: 'POST',
      route: spec.route,
      path: spec.route,
      serverAddress: spec.address,
      serverPort: spec.port,
      clientAddress: series.from.ip,
      userAgent: SERVICE_USER_AGENT,
      statusCode: request.statusCode,
      key: this.key,
      ...(onServerSpan ? { decision: request.decision! } : {}),
      ...(spec.effectConvention === 'attribute' && request.outcome === 'miss'
        ? { effect: { effect: request.failure === 'before_effect' ? 'none' : 'committed', released } }
        : {}),
      errorMessage:
        request.outcome === 'error'
          ? 'idempotency store unavailable'
          : request.failure === 'before_effect'
            ? 'payment processor unavailable'
            : request.failure === 'after_effect'
              ? 'request failed after the charge'
              : 'downstream call failed',
    });
    if (!lostBy || this.ctx.scenario.inFlightSpansOnFailure === 'emitted') {
      this.spans.push(server);
      for (const span of request.ownSpans) this.spans.push(span);
    }
    if (lostBy) {
      this.noteEvent(lostBy, 'broke', Math.max(lostBy.startUnixMillis, request.decidedUnixMillis));
      return;
    }
    const receivedAt = t + networkDelayMillis(this.ctx, node, series.from);
    this.at(receivedAt, () => request.onResponse(this.now, request.statusCode));
  }

  /** The send ends with a response or its timeout, whichever comes first; then maybe a resend. */
  private settleSend(
    send: Send,
    t: number,
    statusCode: number | undefined,
    connectionError?: ConnectionError,
  ): void {
    if (send.settled) return;
    send.settled = true;
    const { series } = send;
    if (series.halted()) return;
    const { edge } = series;
    series.emit(
      clientSpan({
        traceId: send.traceId,
        spanId: send.spanId,
        parentSpanId: send.parentSpanId,
        node: series.from,
        startUnixMillis: send.startUnixMillis,
        endUnixMillis: t,
        method: 'POST',
        url: `https://${edge.spec.address}:${edge.spec.port}${edge.spec.route}`,
        serverAddress: edge.spec.address,
        serverPort: edge.spec.port,
        peerAddress: send.peerAddress,
        resendCount: send.resendCount,
        statusCode,
        errorType:
          connectionError ??
          (statusCode === undefined ? 'timeout' : statusCode >= 400 ? String(statusCode) : undefined),
        key: statusCode === undefined && edge.client.keyOnlyWithResponse === true ? undefined : this.key,
        timeoutMillis: edge.client.timeoutMillis,
      }),
    );
    if (isRetryable(statusCode) && series.sends < edge.client.maxAttempts) {
      const backoff = edge.client.backoffMillis * 2 ** (series.sends - 1) * this.rng.between(0.5, 1.5);
      this.at(t + backoff, () => this.send(series));
      return;
    }
    series.onSettled(t, statusCode);
  }
}

/** Clients resend on no answer, on 5xx and on 409 (another attempt is still in progress). */
function isRetryable(statusCode: number | undefined): boolean {
  return statusCode === undefined || statusCode >= 500 || statusCode === 409;
}

function callerStatus(statusCode: number | undefined): number {
  if (statusCode === undefined) return 504;
  if (statusCode < 400) return 201;
  return statusCode >= 500 || statusCode === 409 ? 502 : statusCode;
}

function pickByWeight<T extends { spec: { weight: number } }>(ctx: SimContext, items: readonly T[]): T {
  const total = items.reduce((sum, item) => sum + item.spec.weight, 0);
  let r = ctx.rng.float() * total;
  for (const item of items) {
    r -= item.spec.weight;
    if (r < 0) return item;
  }
  return items[items.length - 1]!;
}
