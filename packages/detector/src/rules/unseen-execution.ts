import type { Arrival, Attempt, ClientAttempt, ServerAttempt } from '@keyscope/attempts';
import type { DetectorConfig } from '../config.ts';
import { eventCovers, type RoutingEvent, type RoutingEventType } from '../routing/routing-event.ts';
import type { Suspicion, SuspicionEvidence } from './finding.ts';
import { type SpanIndex, spanIndexOf } from './span-index.ts';

/**
 * keyscope judges what reaches it, and a process that is killed (SIGKILL, an OOM kill) takes the
 * spans it had not exported yet with it: the decision and SERVER spans of what it executed in its
 * last export interval, and of what it was executing. The payment happened; the traces show one
 * execution of the key, its retry's. What they still hold are the marks the lost execution left
 * around it — a send of the key that got no answer and no span under it while a node of the
 * service went silent, a store that answered `in_progress` for a lock nobody visible held, a
 * request that reached a node which died before recording its decision. This module reads those
 * marks for one tier of one key (docs/design.md, "Executions the spans do not show").
 */

/**
 * What a CLIENT send of the key says about the request it carried, when no span of the tier is
 * under it:
 *
 * - `never_ran`: the connection never opened (refused, unreachable, a connect timeout), or the
 *   answer was a 503 that no server span under it explains (a balancer with no healthy node, a
 *   service refusing before admission): the request reached no process that could execute it;
 * - `reset`: the connection opened and was reset before any response (`ECONNRESET`, "socket hang
 *   up", "other side closed"): the request reached a process, which went away under it;
 * - `no_answer`: no response at all (a timeout), or a 502/504 from a proxy in between: the request
 *   may or may not have reached a process;
 * - `answered`: a server answered it.
 */
export type SendReading = 'never_ran' | 'reset' | 'no_answer' | 'answered';

/** Errors of a connection that never opened, as Node.js, undici and common clients name them. */
const CONNECT_FAILED =
  /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|UND_ERR_CONNECT_TIMEOUT|ConnectTimeoutError|connection refused/i;
/** Errors of a connection that opened and was closed under the request. */
const RESET = /ECONNRESET|EPIPE|socket hang up|other side closed|UND_ERR_SOCKET|connection reset/i;

export function readSend(send: ClientAttempt): SendReading {
  // Statuses first: a send with a response (most of them) costs no pattern match.
  if (send.statusCode === 503) return 'never_ran';
  if (send.statusCode === 502 || send.statusCode === 504) return 'no_answer';
  if (send.statusCode !== 0) return 'answered';
  if (CONNECT_FAILED.test(send.error)) return 'never_ran';
  return RESET.test(send.error) ? 'reset' : 'no_answer';
}

/**
 * Whether an attempt could be a mark of an execution the spans do not show, once routing events
 * are known: a send that may have reached a process and got no answer, or a request whose SERVER
 * span ended without one. The detector judges such a key even when nothing else makes it suspect,
 * and judges it again when its services' routing events change.
 */
export function mayHideExecution(attempt: Attempt): boolean {
  if (attempt.kind === 'client') {
    const reading = readSend(attempt);
    return reading === 'reset' || reading === 'no_answer';
  }
  return attempt.kind === 'arrival' && unanswered(attempt);
}

/**
 * Whether any of a key's attempts is a mark `suspectUnseenExecution` reads: a send that may have
 * reached a process and got no answer, a request that ended without one, or an `in_progress`
 * answer. Most keys have none, and need no index of their evidence.
 */
export function hasUnseenExecutionMarks(evidence: readonly Attempt[]): boolean {
  for (const attempt of evidence) {
    if (attempt.kind === 'server' ? attempt.outcome === 'in_progress' : mayHideExecution(attempt))
      return true;
  }
  return false;
}

/** A SERVER span that ended without an answer of its own (none, or a 5xx other than a 503). */
function unanswered(arrival: Arrival): boolean {
  return arrival.statusCode === 0 || (arrival.statusCode >= 500 && arrival.statusCode !== 503);
}

/** Routing events that mean a node stopped emitting spans. */
const SILENCES: ReadonlySet<RoutingEventType> = new Set(['node_down', 'cluster_failover', 'region_failover']);

/**
 * How much later than an `in_progress` answer a visible execution in the same store may start and
 * still be the one holding the key: the clocks of two nodes sharing a store disagree a little.
 */
const CLOCK_SKEW_MILLIS = 250;

/** One tier of one key, as evaluate-key.ts groups it. */
export interface UnseenTier {
  service: string;
  operation: string;
  /** Its server attempts (store decisions), every tenant's. */
  server: readonly ServerAttempt[];
  /** Its server attempts and arrivals. */
  landed: readonly Attempt[];
}

export interface UnseenExecution {
  suspicion: Suspicion;
  /** The routing event the strongest evidence rests on, for attribution; null when none does. */
  event: RoutingEvent | null;
}

/**
 * The evidence that `tenant`'s key, which the spans show executing once at `tier`, ran there once
 * more, or null when there is none. Marks that say the request never ran (`never_ran`
 * sends, a 503 before admission) are no evidence; a send with a span of the tier (or of any
 * service) under it is judged by that span, not here. `events` are the routing events of the
 * tier's service. Pure: the same evidence and events give the same answer in any order.
 */
export function suspectUnseenExecution(
  tier: UnseenTier,
  tenant: string,
  evidence: readonly Attempt[],
  events: readonly RoutingEvent[],
  config: DetectorConfig,
): UnseenExecution | null {
  const silences = events.filter((event) => SILENCES.has(event.type));
  const index = indexEvidence(evidence);
  const ofTenant = (a: Attempt) => a.tenant === '' || a.tenant === tenant;
  const found: { item: SuspicionEvidence; event: RoutingEvent | null }[] = [];

  for (const send of sendsToTier(tier, index)) {
    if (!ofTenant(send) || hasLanding(send, index)) continue;
    const reading = readSend(send);
    if (reading === 'reset') {
      // The reset is the moment the process went away: a node that went silent then is where.
      const event = nearest(silences, send.endUnixMillis, config.routingSlackMillis);
      found.push({
        item: sendEvidence('send_reset', event === null ? 'moderate' : 'strong', send, event),
        event,
      });
    } else if (reading === 'no_answer') {
      // Only a node that stopped while the send waited, and had been serving when it began: a send
      // into a node already silent most likely reached nothing, like a refused one.
      const event = latestStart(
        silences.filter(
          (e) =>
            e.startUnixMillis >= send.startUnixMillis + config.routingSlackMillis &&
            e.startUnixMillis <= send.endUnixMillis + config.routingSlackMillis,
        ),
      );
      if (event !== null) {
        found.push({ item: sendEvidence('send_cut_off', 'strong', send, event), event });
        continue;
      }
      const lost =
        send.statusCode === 502 || send.statusCode === 504 ? lostBehindProxy(send, silences, config) : null;
      if (lost !== null)
        found.push({ item: sendEvidence('send_lost_behind_proxy', 'strong', send, lost), event: lost });
    }
  }

  // The first execution in each store the spans show: the earliest that could hold its key.
  const firstMiss = new Map<string, number>();
  for (const a of tier.server) {
    if (a.outcome !== 'miss') continue;
    const known = firstMiss.get(a.store);
    if (known === undefined || a.startUnixMillis < known) firstMiss.set(a.store, a.startUnixMillis);
  }
  for (const answer of tier.server) {
    if (answer.outcome !== 'in_progress' || !ofTenant(answer)) continue;
    const holder = firstMiss.get(answer.store);
    if (holder !== undefined && holder <= answer.startUnixMillis + CLOCK_SKEW_MILLIS) continue;
    const event = latestStart(
      silences.filter(
        (e) =>
          storeReaches(answer, e) && e.startUnixMillis <= answer.startUnixMillis + config.routingSlackMillis,
      ),
    );
    found.push({
      item: {
        kind: 'unexplained_in_progress',
        strength: 'strong',
        traceId: answer.traceId,
        spanId: answer.spanId,
        atUnixMillis: answer.startUnixMillis,
        node: answer.scope === 'node' ? answer.placement.node : (event?.node ?? ''),
        store: answer.store,
        routingEventId: event?.id ?? null,
      },
      event,
    });
  }

  for (const arrival of tier.landed) {
    if (arrival.kind !== 'arrival' || !ofTenant(arrival) || !unanswered(arrival)) continue;
    if (index.decidedUnder.has(spanKey(arrival.traceId, arrival.spanId))) continue;
    const event = nearest(
      silences.filter((e) => eventCovers(e, arrival.placement)),
      arrival.endUnixMillis,
      config.routingSlackMillis,
    );
    if (event === null) continue;
    found.push({
      item: {
        kind: 'arrival_without_decision',
        strength: 'strong',
        traceId: arrival.traceId,
        spanId: arrival.spanId,
        atUnixMillis: arrival.startUnixMillis,
        node: arrival.placement.node,
        store: '',
        routingEventId: event.id,
      },
      event,
    });
  }

  // None of these is the visible execution's own: its request has its decision under it, and its
  // send a landing.
  if (found.length === 0) return null;
  found.sort((a, b) => compareEvidence(a.item, b.item));
  const strong = found.filter(({ item }) => item.strength === 'strong');
  const attributed = (strong.length > 0 ? strong : found).find(({ event }) => event !== null);
  return {
    suspicion: {
      strength: strong.length > 0 ? 'strong' : 'moderate',
      evidence: found.map(({ item }) => item),
    },
    event: attributed?.event ?? null,
  };
}

/** The key's evidence indexed once, so that each question about a span is a lookup. */
interface EvidenceIndex {
  clients: ClientAttempt[];
  spans: SpanIndex;
  /** (trace id, span id) of every span a server span or arrival names as its parent. */
  parentsOfLandings: Set<string>;
  /** Per trace, the server spans and arrivals whose parent is no span of the key. */
  unlinkedLandings: Map<string, Attempt[]>;
  /** (trace id, span id) of every span a store decision names as its parent. */
  decidedUnder: Set<string>;
}

function indexEvidence(evidence: readonly Attempt[]): EvidenceIndex {
  const index: EvidenceIndex = {
    clients: [],
    spans: spanIndexOf(evidence),
    parentsOfLandings: new Set(),
    unlinkedLandings: new Map(),
    decidedUnder: new Set(),
  };
  for (const attempt of evidence) {
    if (attempt.kind === 'client') index.clients.push(attempt);
    if (attempt.kind !== 'server' && attempt.kind !== 'arrival') continue;
    const parent = spanKey(attempt.traceId, attempt.parentSpanId);
    index.parentsOfLandings.add(parent);
    if (attempt.kind === 'server') index.decidedUnder.add(parent);
    if (index.spans.get(attempt.traceId, attempt.parentSpanId) === undefined) {
      const list = index.unlinkedLandings.get(attempt.traceId);
      if (list === undefined) index.unlinkedLandings.set(attempt.traceId, [attempt]);
      else list.push(attempt);
    }
  }
  return index;
}

/**
 * The CLIENT sends of the key that called this tier: those of the callers and targets whose sends
 * a request at the tier names as its parent, or — when no send to the tier carries the key — the
 * sends of another service in the traces that reached it.
 */
function sendsToTier(tier: UnseenTier, index: EvidenceIndex): ClientAttempt[] {
  const clients = index.clients.filter((send) => send.placement.service !== tier.service);
  const routes = new Set<string>();
  for (const landed of tier.landed) {
    const parent = index.spans.get(landed.traceId, landed.parentSpanId);
    if (parent?.kind === 'client') routes.add(routeOf(parent));
  }
  if (routes.size > 0) return clients.filter((send) => routes.has(routeOf(send)));
  const traces = new Set(tier.landed.map((a) => a.traceId));
  return clients.filter((send) => traces.has(send.traceId));
}

function routeOf(send: ClientAttempt): string {
  return `${send.placement.service}\u0000${send.target}`;
}

/**
 * Some server span landed under the send: one naming it as parent, or — past a hop that carries no
 * key (a proxy's or a mesh sidecar's span) — one of another service in its trace that began while
 * it waited.
 */
function hasLanding(send: ClientAttempt, index: EvidenceIndex): boolean {
  if (index.parentsOfLandings.has(spanKey(send.traceId, send.spanId))) return true;
  return (index.unlinkedLandings.get(send.traceId) ?? []).some(
    (a) =>
      a.placement.service !== send.placement.service &&
      a.startUnixMillis >= send.startUnixMillis &&
      a.startUnixMillis <= send.endUnixMillis,
  );
}

/**
 * The silence a proxy's 502/504 answer to `send` came from, when it says the proxy had forwarded
 * the request to a node that then went away with it: the proxy gave up while a node of the service
 * was silent, and the send began before that node had been silent for `silenceMinMillis`. A node
 * that stops emitting spans may still be executing what it took (it hangs before it is killed, and
 * nginx answers each request it had forwarded with a 502 at the kill); one silent for a whole
 * `silenceMinMillis` when the send began was reached by nothing (a partition: the proxy's
 * connections through it break when the path heals, with 502s for requests the node never saw).
 * A node that went silent only after the send began is `send_cut_off`'s. The latest such silence
 * to start, or null.
 */
function lostBehindProxy(
  send: ClientAttempt,
  silences: readonly RoutingEvent[],
  config: DetectorConfig,
): RoutingEvent | null {
  return latestStart(
    silences.filter(
      (e) =>
        send.startUnixMillis < e.startUnixMillis + config.silenceMinMillis &&
        send.endUnixMillis >= e.startUnixMillis - config.routingSlackMillis &&
        send.endUnixMillis <= e.endUnixMillis + config.routingSlackMillis,
    ),
  );
}

/** Whether the node `event` silenced could have held a lock in the store that answered `answer`. */
function storeReaches(answer: ServerAttempt, event: RoutingEvent): boolean {
  const { placement } = answer;
  switch (answer.scope) {
    case 'node':
      return eventCovers(event, placement);
    case 'cluster':
      return event.cluster === placement.cluster && event.region === placement.region;
    case 'region':
      return event.region === placement.region;
    default:
      // Tenant, global or undeclared: any node of the service may have held it.
      return true;
  }
}

/**
 * The event whose window, widened by `slackMillis`, holds `atUnixMillis`: the one it lies deepest
 * in (nearest its start), then the latest to start, then the smallest id.
 */
function nearest(
  events: readonly RoutingEvent[],
  atUnixMillis: number,
  slackMillis: number,
): RoutingEvent | null {
  let best: RoutingEvent | null = null;
  let bestDistance = 0;
  for (const event of events) {
    if (
      atUnixMillis < event.startUnixMillis - slackMillis ||
      atUnixMillis > event.endUnixMillis + slackMillis
    )
      continue;
    const distance = Math.abs(atUnixMillis - event.startUnixMillis);
    if (
      best === null ||
      distance < bestDistance ||
      (distance === bestDistance && latestFirst(event, best) < 0)
    ) {
      best = event;
      bestDistance = distance;
    }
  }
  return best;
}

/** The latest to start, then the smallest id. */
function latestStart(events: readonly RoutingEvent[]): RoutingEvent | null {
  let best: RoutingEvent | null = null;
  for (const event of events) if (best === null || latestFirst(event, best) < 0) best = event;
  return best;
}

function latestFirst(a: RoutingEvent, b: RoutingEvent): number {
  return b.startUnixMillis - a.startUnixMillis || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function sendEvidence(
  kind: 'send_reset' | 'send_cut_off' | 'send_lost_behind_proxy',
  strength: SuspicionEvidence['strength'],
  send: ClientAttempt,
  event: RoutingEvent | null,
): SuspicionEvidence {
  return {
    kind,
    strength,
    traceId: send.traceId,
    spanId: send.spanId,
    atUnixMillis: send.startUnixMillis,
    node: event?.node ?? '',
    store: '',
    routingEventId: event?.id ?? null,
  };
}

function compareEvidence(a: SuspicionEvidence, b: SuspicionEvidence): number {
  return (
    a.atUnixMillis - b.atUnixMillis ||
    compareStrings(a.traceId, b.traceId) ||
    compareStrings(a.spanId, b.spanId) ||
    compareStrings(a.kind, b.kind)
  );
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function spanKey(traceId: string, spanId: string): string {
  return `${traceId}/${spanId}`;
}
