import type { Span } from '@keyscope/otlp';
import type { DedupOutcome } from './dedup-store.ts';

/**
 * Ground truth: what really happened to each key, computed from the simulation's own record of
 * which store admitted what (including executions whose spans were lost), not from the spans.
 */
export type TruthClass =
  | 'cross_store_duplicate'
  | 'same_store_duplicate'
  | 'absorbed_duplicate'
  | 'key_collision'
  | 'scope_violation';

export interface TruthExecution {
  store: string;
  /** `service.instance.id` of the node that executed. */
  node: string;
  /** The span that recorded the decision (`idempotency.check`, or the SERVER span). */
  spanId: string;
  traceId: string;
  /** Start of that span. */
  startUnixMillis: number;
  /** The CLIENT span of the send that delivered it (a proxy's tries share their client's send). */
  sendSpanId: string;
  /**
   * That span reached the pipeline. False when it was lost: its node was killed before exporting
   * it (`ProcessKillSpec`), or died with it in flight (`inFlightSpansOnFailure: 'lost'`).
   */
  visible: boolean;
}

export interface TruthKey {
  key: string;
  class: TruthClass;
  /** `same_store_duplicate` only. */
  cause?: 'ttl_expired' | 'race';
  /** The tier where the duplicate (or violation) happened. */
  service: string;
  operation: string;
  tenants: string[];
  /** The real executions (a `miss` whose effect committed) at that tier, in time order. */
  executions: TruthExecution[];
  /** Distinct stores the key's attempts reached at that tier, in order of first reach. */
  stores: string[];
  retriedBy: 'client' | 'proxy' | 'unknown';
  /**
   * The failure that caused it, if any: the first that broke one of the key's requests at this
   * tier between the first attempt that counts (the first execution of a duplicate, the first
   * visit of a scope violation) and the repeat (the second execution, or the first visit of a
   * second store). A key collision has none: two tenants chose one key, no failure did.
   */
  routingEventId?: string;
}

export interface TruthRoutingEvent {
  id: string;
  type: 'node_down' | 'region_failover' | 'error_spike' | 'execution_failure' | 'brownout';
  service: string;
  node?: string;
  cluster?: string;
  region?: string;
  startUnixMillis: number;
  endUnixMillis: number;
  /**
   * A killed node's (`ProcessKillSpec`): when its SDK last exported spans before the kill. What it
   * had not exported by then never reached the pipeline.
   */
  lastExportUnixMillis?: number;
}

export interface GroundTruth {
  keys: TruthKey[];
  routingEvents: TruthRoutingEvent[];
  /**
   * Keys that ran exactly once everywhere, for precision checks. Keys that never executed (every
   * send failed) are neither here nor in `keys`.
   */
  cleanKeys: number;
  /**
   * Spans head sampling dropped (`Scenario.sampling`), by trace and span id, whether or not a
   * killed process would have lost them too. Absent without sampling.
   */
  sampledOut?: { traceId: string; spanId: string }[];
}

/** One consultation of a dedup store, as it happened (observable or not). */
export interface StoreVisit {
  service: string;
  operation: string;
  /** The store id as consumers see it (given on the span, or derived from scope and resource). */
  store: string;
  node: string;
  tenant: string;
  outcome: DedupOutcome;
  /** Why a `miss` was admitted although the key had been seen: `fresh` when it had not. */
  admission: 'fresh' | 'expired' | 'released' | 'concurrent' | 'lease_expired' | undefined;
  /**
   * For a `miss`, whether its side effect took place: `none` when the request failed before it (an
   * `execution_failure` before the effect). Only committed misses are executions.
   */
  effect: 'committed' | 'none';
  spanId: string;
  traceId: string;
  startUnixMillis: number;
  /** The CLIENT span whose send this visit served; a proxy's retries share it. */
  clientSpanId: string;
  /** For a downstream visit, the decision span id of the upstream execution that called. */
  upstreamSpanId: string | undefined;
  /** Its span (`spanId`) reached the pipeline (see `TruthExecution.visible`). */
  visible: boolean;
}

/** A failure that touched one of a key's requests, and when in the key's history it did. */
export interface TouchingEvent {
  /** The `TruthRoutingEvent` id. */
  id: string;
  /**
   * `broke`: it broke a request in flight — lost its response (the node died under it), failed
   * its store lookup or its execution, or swallowed the send (it reached a dead node);
   * `rerouted`: it only moved a send away from the node the balancer would have picked.
   */
  how: 'broke' | 'rerouted';
  /**
   * When it touched the key. For a lost response, when the node died under the request, but no
   * earlier than the request's store decision (a node that dies between a request's arrival and
   * its decision still decides, behind its partition).
   */
  atUnixMillis: number;
  /** The node whose failure it is, when the failure is one node's. */
  node?: string;
}

/** Everything that happened to one key: the input of `classifyKey`. */
export interface KeyHistory {
  key: string;
  /** Tenants that used the key, in order of first use. */
  tenants: string[];
  /** In time order of the store decision. */
  visits: StoreVisit[];
  /** Failures that touched the key's sends or responses, in the order they did. */
  routingEvents: TouchingEvent[];
}

export interface KeyVerdict {
  keys: TruthKey[];
  clean: boolean;
}

/** Classifies one key per dedup tier (service + operation). */
export function classifyKey(history: KeyHistory): KeyVerdict {
  const tiers = new Map<string, StoreVisit[]>();
  for (const visit of history.visits) {
    const tier = `${visit.service} ${visit.operation}`;
    const list = tiers.get(tier);
    if (list) list.push(visit);
    else tiers.set(tier, [visit]);
  }
  const keys: TruthKey[] = [];
  const causeOf = (first: StoreVisit, repeat: StoreVisit | undefined): string | undefined =>
    repeat === undefined ? undefined : causingEvent(history, first, repeat);
  const collision = history.tenants.length >= 2;
  let everyTierOnce = tiers.size > 0;

  for (const visits of tiers.values()) {
    const first = visits[0]!;
    if (collision && first.upstreamSpanId === undefined) {
      // The other tenant's use of the key was sent by its client, like any repeat from a client.
      keys.push(
        truthKey(
          history.key,
          'key_collision',
          visits,
          history.tenants,
          retriedBy(visits),
          undefined,
          undefined,
        ),
      );
    }
    // Different tenants' uses of one key are different requests: count executions per tenant.
    const groups = collision ? groupBy(visits, (v) => v.tenant) : [visits];
    for (const group of groups) {
      const executions = group.filter(isExecution);
      if (executions.length !== 1) everyTierOnce = false;
      const stores = distinct(group.map((v) => v.store));
      if (executions.length >= 2) {
        const cls = duplicateClass(executions, history.visits);
        const cause =
          cls === 'same_store_duplicate'
            ? executions.slice(1).some((v) => v.admission === 'expired')
              ? 'ttl_expired'
              : 'race'
            : undefined;
        const routingEventId = causeOf(executions[0]!, executions[1]);
        keys.push(
          truthKey(history.key, cls, group, [group[0]!.tenant], retriedBy(executions), routingEventId, cause),
        );
      } else if (stores.length >= 2) {
        const crossing = group.find((v) => v.store !== group[0]!.store);
        keys.push(
          truthKey(
            history.key,
            'scope_violation',
            group,
            [group[0]!.tenant],
            retriedBy(group),
            causeOf(group[0]!, crossing),
            undefined,
          ),
        );
      }
    }
  }
  return { keys, clean: keys.length === 0 && everyTierOnce };
}

/**
 * The first failure that broke one of the key's requests from `first`'s store decision to
 * `repeat`'s (inclusive: a store error on `first` itself counts). A failure that only rerouted a
 * send broke nothing: the send still reached a live node, which answered for the key.
 */
function causingEvent(history: KeyHistory, first: StoreVisit, repeat: StoreVisit): string | undefined {
  // A node's failure caused the repeat when it broke the first execution's request in between: a
  // slow tail on a healthy node that sent the retry into a browned-out one is not the brownout's.
  const cause = history.routingEvents.find(
    (event) =>
      event.how === 'broke' &&
      (event.node === undefined || event.node === first.node) &&
      event.atUnixMillis >= first.startUnixMillis &&
      event.atUnixMillis <= repeat.startUnixMillis,
  );
  return cause?.id;
}

function duplicateClass(executions: StoreVisit[], all: StoreVisit[]): TruthClass {
  // Absorbed: the repeats' side effects went through a downstream dedup that did not execute
  // them again, so at most one execution reached the downstream tier.
  const executionIds = new Set(executions.map((v) => v.spanId));
  const downstream = all.filter((v) => v.upstreamSpanId !== undefined && executionIds.has(v.upstreamSpanId));
  if (downstream.length > 0) {
    const downstreamExecutions = downstream.filter((v) => v.outcome === 'miss').length;
    if (downstreamExecutions <= 1) return 'absorbed_duplicate';
  }
  return distinct(executions.map((v) => v.store)).length >= 2
    ? 'cross_store_duplicate'
    : 'same_store_duplicate';
}

/** A proxy retried when one client send produced two of the visits; the client when sends differ. */
function retriedBy(visits: StoreVisit[]): TruthKey['retriedBy'] {
  const perSend = new Map<string, number>();
  for (const visit of visits) perSend.set(visit.clientSpanId, (perSend.get(visit.clientSpanId) ?? 0) + 1);
  for (const count of perSend.values()) if (count >= 2) return 'proxy';
  return perSend.size >= 2 ? 'client' : 'unknown';
}

function truthKey(
  key: string,
  cls: TruthClass,
  visits: StoreVisit[],
  tenants: string[],
  retried: TruthKey['retriedBy'],
  routingEventId: string | undefined,
  cause: TruthKey['cause'],
): TruthKey {
  const first = visits[0]!;
  const truth: TruthKey = {
    key,
    class: cls,
    service: first.service,
    operation: first.operation,
    tenants: [...tenants],
    executions: visits.filter(isExecution).map((v) => ({
      store: v.store,
      node: v.node,
      spanId: v.spanId,
      traceId: v.traceId,
      startUnixMillis: v.startUnixMillis,
      sendSpanId: v.clientSpanId,
      visible: v.visible,
    })),
    stores: distinct(visits.map((v) => v.store)),
    retriedBy: retried,
  };
  if (cause !== undefined) truth.cause = cause;
  if (routingEventId !== undefined) truth.routingEventId = routingEventId;
  return truth;
}

/** An admitted attempt executed unless it failed before its side effect. */
function isExecution(visit: StoreVisit): boolean {
  return visit.outcome === 'miss' && visit.effect === 'committed';
}

function distinct(values: string[]): string[] {
  return [...new Set(values)];
}

function groupBy<T>(items: T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}

/** Accumulates verdicts; keeps only the keys that are not clean, so memory follows the anomalies. */
export class TruthRecorder {
  private readonly keys: TruthKey[] = [];
  private cleanKeys = 0;
  private dropped: { traceId: string; spanId: string }[] | undefined;

  constructor(
    private readonly routingEvents: TruthRoutingEvent[],
    sampling: boolean,
  ) {
    if (sampling) this.dropped = [];
  }

  /** Spans head sampling dropped. */
  sampledOut(spans: readonly Span[]): void {
    for (const span of spans) this.dropped?.push({ traceId: span.traceId, spanId: span.spanId });
  }

  record(verdict: KeyVerdict): void {
    for (const key of verdict.keys) this.keys.push(key);
    if (verdict.clean) this.cleanKeys++;
  }

  truth(): GroundTruth {
    return {
      keys: this.keys.map((k) => structuredClone(k)),
      routingEvents: this.routingEvents.map((e) => ({ ...e })),
      cleanKeys: this.cleanKeys,
      ...(this.dropped === undefined ? {} : { sampledOut: this.dropped.map((span) => ({ ...span })) }),
    };
  }
}
