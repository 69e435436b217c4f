import type { DetectorConfig } from '../config.ts';
import { stableId } from '../ids.ts';
import type { RoutingEvent } from '../routing/routing-event.ts';
import { type AdviceFacts, adviceSentences, type FindingFacts, factsOf } from '../rules/advice.ts';
import { isRouteLike } from '../rules/endpoint.ts';
import type { Finding, FindingClass, Severity, SeverityReason } from '../rules/finding.ts';
import type { IncidentFacts } from './incident-facts.ts';
import { IncidentTally } from './incident-tally.ts';

export type IncidentStatus = 'open' | 'resolved';

/**
 * Findings grouped by (service, operation, class, routing event or time bucket): one failover
 * that doubles 300 payments is one incident, so on-call is paged once.
 */
export interface Incident {
  id: string;
  service: string;
  operation: string;
  class: FindingClass;
  severity: Severity;
  /**
   * Why `severity` is below its class's: its findings' (findings with a reason are grouped apart
   * from those without). Absent when it is not.
   */
  severityReason?: SeverityReason;
  status: IncidentStatus;
  /** The routing event the findings overlap; null when grouped by time bucket. */
  routingEvent: RoutingEvent | null;
  /** Start of the time bucket when there is no routing event. */
  bucketStartUnixMillis: number | null;
  /** Keys (findings) in the incident. */
  keys: number;
  /**
   * False while the routing attribution of every finding in it may still change (the node
   * activity after their repeats is not yet final, see `allowedLatenessMillis`): the incident may
   * yet be regrouped under a routing event, and alerts do not page it. True once one finding's
   * attribution is final; it stays true. Absent on incidents stored before it was recorded: settled.
   */
  settled: boolean;
  /**
   * The stores its findings' attempts consulted at its tier and the nodes they landed on, in name
   * order: at most `maxStoresPerIncident` of each.
   */
  stores: string[];
  nodes: string[];
  /**
   * How many stores and nodes there are, listed or not. Absent on incidents stored before it was
   * recorded, whose lists are whole.
   */
  storesTotal: number;
  nodesTotal: number;
  openedUnixMillis: number;
  lastFindingUnixMillis: number;
  resolvedUnixMillis: number | null;
  title: string;
  advice: string;
  /**
   * The ids of the advice's sentences, in order (`ADVICE_SENTENCES`, docs/incidents.md): which
   * facts of the keys chose each. Absent on incidents stored before it was recorded.
   */
  adviceSentences?: string[];
  /**
   * What the title and advice are made of, as data that adds up over the parts of one incident
   * (incident-facts.ts): the Kafka serve role sums its partitions' and words the whole. Absent on
   * incidents stored before it was recorded.
   */
  facts?: IncidentFacts;
}

interface IncidentEntry {
  incident: Incident;
  members: Map<string, Finding>;
  /** Each member's contribution to the advice, computed once when it is placed. */
  facts: Map<string, FindingFacts>;
  /** The members' totals behind the summary. */
  tally: IncidentTally;
  /** What of `listOverflow` this incident accounts for: names its lists left out at their longest. */
  overflowCounted: { stores: number; nodes: number };
}

/** `incident.storesTotal`, or the list's length for an incident stored before it was recorded. */
export function storesTotalOfIncident(incident: Pick<Incident, 'stores' | 'storesTotal'>): number {
  return incident.storesTotal ?? incident.stores.length;
}

/** `incident.nodesTotal`, or the list's length for an incident stored before it was recorded. */
export function nodesTotalOfIncident(incident: Pick<Incident, 'nodes' | 'nodesTotal'>): number {
  return incident.nodesTotal ?? incident.nodes.length;
}

/** Names left out of lists by their cap, counted as each list grows past it (`DetectorStats`). */
export interface ListOverflow {
  findingStores: number;
  findingNodes: number;
  incidentStores: number;
  incidentNodes: number;
}

/** Groups findings into incidents and resolves incidents after a quiet period. */
export class IncidentBook {
  private readonly incidents = new Map<string, IncidentEntry>();
  /** finding id → incident id */
  private readonly membership = new Map<string, string>();
  /**
   * Incidents whose summary (counts, stores, title, advice) is stale. Summaries are rebuilt once
   * per detector call in `settle`, not once per finding placed: a failover places hundreds of
   * findings in one incident within one call, and rebuilding per finding was quadratic.
   */
  readonly #dirty = new Set<IncidentEntry>();
  /** Names incidents' lists left out; the FindingsLedger adds its findings' (findings-ledger.ts). */
  readonly overflow: ListOverflow = {
    findingStores: 0,
    findingNodes: 0,
    incidentStores: 0,
    incidentNodes: 0,
  };

  constructor(private readonly config: DetectorConfig) {}

  /**
   * Places a finding (new or updated) in its incident, moving it out of the one it was in;
   * incidents that changed go to `changed`, incidents left empty to `retracted`.
   */
  place(
    finding: Omit<Finding, 'incidentId'>,
    changed: Map<string, Incident>,
    retracted: Set<string>,
  ): Finding {
    const event = finding.routing.event;
    const bucketStart =
      Math.floor(finding.firstSeenUnixMillis / this.config.incidentBucketMillis) *
      this.config.incidentBucketMillis;
    const group = event !== null ? `event:${event.id}` : `bucket:${bucketStart}`;
    const reason = finding.severityReason;
    const incidentId = stableId(
      'inc',
      reason === undefined
        ? [finding.service, finding.operation, finding.class, group]
        : [finding.service, finding.operation, finding.class, group, reason],
    );
    const placed: Finding = { ...finding, incidentId };

    const previous = this.membership.get(finding.id);
    if (previous !== undefined && previous !== incidentId) this.remove(finding.id, changed, retracted);

    let entry = this.incidents.get(incidentId);
    if (entry === undefined) {
      entry = {
        incident: {
          id: incidentId,
          service: finding.service,
          operation: finding.operation,
          class: finding.class,
          severity: finding.severity,
          ...(reason === undefined ? {} : { severityReason: reason }),
          status: 'open',
          routingEvent: event,
          bucketStartUnixMillis: event === null ? bucketStart : null,
          keys: 0,
          settled: false,
          stores: [],
          nodes: [],
          storesTotal: 0,
          nodesTotal: 0,
          openedUnixMillis: finding.firstSeenUnixMillis,
          lastFindingUnixMillis: finding.lastSeenUnixMillis,
          resolvedUnixMillis: null,
          title: '',
          advice: '',
        },
        members: new Map(),
        facts: new Map(),
        tally: new IncidentTally(),
        overflowCounted: { stores: 0, nodes: 0 },
      };
      this.incidents.set(incidentId, entry);
      retracted.delete(incidentId);
    }
    const replaced = entry.members.get(finding.id);
    const facts = factsOf(placed);
    if (replaced !== undefined) entry.tally.replace(replaced, entry.facts.get(finding.id)!, placed, facts);
    else entry.tally.add(placed, facts);
    entry.members.set(finding.id, placed);
    entry.facts.set(finding.id, facts);
    this.membership.set(finding.id, incidentId);
    if (event !== null) entry.incident.routingEvent = event;
    this.#dirty.add(entry);
    changed.set(incidentId, entry.incident);
    return placed;
  }

  /** Takes a finding out of its incident; an incident left empty is deleted (and reported). */
  remove(findingId: string, changed: Map<string, Incident>, retracted: Set<string>): void {
    const incidentId = this.membership.get(findingId);
    if (incidentId === undefined) return;
    this.membership.delete(findingId);
    const entry = this.incidents.get(incidentId);
    if (entry === undefined) return;
    const member = entry.members.get(findingId);
    if (member !== undefined) entry.tally.remove(member, entry.facts.get(findingId)!);
    entry.members.delete(findingId);
    entry.facts.delete(findingId);
    if (entry.members.size === 0) {
      this.incidents.delete(incidentId);
      changed.delete(incidentId);
      retracted.add(incidentId);
      return;
    }
    this.#dirty.add(entry);
    changed.set(incidentId, entry.incident);
  }

  incidentOf(findingId: string): string | undefined {
    return this.membership.get(findingId);
  }

  /** Findings currently placed, for re-judging when routing events change. */
  findings(): Finding[] {
    const out: Finding[] = [];
    for (const entry of this.incidents.values()) out.push(...entry.members.values());
    return out;
  }

  all(): Incident[] {
    this.summarizeChanged();
    return [...this.incidents.values()].map((entry) => entry.incident);
  }

  get(id: string): Incident | undefined {
    this.summarizeChanged();
    return this.incidents.get(id)?.incident;
  }

  /** Resolves open incidents quiet since `nowUnixMillis - quietPeriodMillis`; reopens none. */
  resolveQuiet(nowUnixMillis: number, changed: Map<string, Incident>): void {
    this.summarizeChanged();
    for (const { incident } of this.incidents.values()) {
      if (incident.status !== 'open') continue;
      if (nowUnixMillis - incident.lastFindingUnixMillis >= this.config.quietPeriodMillis) {
        incident.status = 'resolved';
        incident.resolvedUnixMillis = incident.lastFindingUnixMillis + this.config.quietPeriodMillis;
        changed.set(incident.id, incident);
      }
    }
  }

  /** Forgets resolved incidents whose last finding is older than the cutoff. */
  forget(beforeUnixMillis: number): void {
    this.summarizeChanged();
    for (const [id, entry] of this.incidents) {
      if (entry.incident.status === 'resolved' && entry.incident.lastFindingUnixMillis < beforeUnixMillis) {
        this.incidents.delete(id);
        for (const findingId of entry.members.keys()) this.membership.delete(findingId);
      }
    }
  }

  /**
   * Marks the incident of `findingId` settled: that finding's routing attribution is final, so
   * the incident's grouping no longer waits on activity still to arrive (alerts page only settled
   * incidents). An incident stays settled; a later revision moves findings to another incident.
   */
  settle(findingId: string, changed: Map<string, Incident>): void {
    const incidentId = this.membership.get(findingId);
    const entry = incidentId === undefined ? undefined : this.incidents.get(incidentId);
    if (entry === undefined || entry.incident.settled) return;
    entry.incident.settled = true;
    changed.set(entry.incident.id, entry.incident);
  }

  /** Brings every changed incident's summary up to date; call before handing incidents out. */
  summarizeChanged(): void {
    for (const entry of this.#dirty)
      if (this.incidents.get(entry.incident.id) === entry) this.summarize(entry);
    this.#dirty.clear();
  }

  private summarize(entry: IncidentEntry): void {
    const incident = entry.incident;
    const summary = entry.tally.summary(() => membersOf(entry), this.config.maxStoresPerIncident);
    const last = summary.lastFindingUnixMillis;
    incident.keys = entry.members.size;
    incident.stores = summary.stores;
    incident.nodes = summary.nodes;
    incident.storesTotal = summary.storesTotal;
    incident.nodesTotal = summary.nodesTotal;
    const storesLeftOut = summary.storesTotal - summary.stores.length;
    const nodesLeftOut = summary.nodesTotal - summary.nodes.length;
    if (storesLeftOut > entry.overflowCounted.stores) {
      this.overflow.incidentStores += storesLeftOut - entry.overflowCounted.stores;
      entry.overflowCounted.stores = storesLeftOut;
    }
    if (nodesLeftOut > entry.overflowCounted.nodes) {
      this.overflow.incidentNodes += nodesLeftOut - entry.overflowCounted.nodes;
      entry.overflowCounted.nodes = nodesLeftOut;
    }
    incident.openedUnixMillis = summary.openedUnixMillis;
    if (last > incident.lastFindingUnixMillis || incident.status === 'open')
      incident.lastFindingUnixMillis = last;
    if (incident.status === 'resolved' && last > (incident.resolvedUnixMillis ?? last)) {
      incident.status = 'open';
      incident.resolvedUnixMillis = null;
    }
    incident.facts = summary.incidentFacts;
    Object.assign(incident, describeIncident(incident, summary.facts));
  }
}

/**
 * The incident as some of its findings alone tell it: keys, stores, nodes, first and last finding,
 * title and advice from `members` only; id, class, status, routing event (and whatever else `T`
 * carries, such as who acknowledged it) stay the incident's. This is a tenant's view of an
 * incident that also holds other tenants' keys — one failover is one incident for on-call, and
 * each tenant sees only its own part of it. `members` must not be empty; the view lists at most
 * `maxListed` stores and nodes, and counts them all.
 */
export function incidentOfMembers<T extends Incident>(
  incident: T,
  members: Iterable<Finding>,
  maxListed: number,
): T {
  const view = new IncidentPartView();
  for (const finding of members) view.add(finding);
  return view.of(incident, maxListed);
}

/**
 * `incidentOfMembers` a finding at a time: it keeps what each finding adds to the summary, not the
 * finding, so a caller can read an incident's findings a page at a time.
 */
export class IncidentPartView {
  readonly #tally = new IncidentTally();
  #keys = 0;

  add(finding: Finding): void {
    this.#tally.add(finding, factsOf(finding));
    this.#keys++;
  }

  /** Findings added. */
  get keys(): number {
    return this.#keys;
  }

  of<T extends Incident>(incident: T, maxListed: number): T {
    if (this.#keys === 0) throw new RangeError('an incident view needs at least one finding');
    // Only removals make the tally read its members again; a view only adds.
    const summary = this.#tally.summary(() => [], maxListed);
    const view: T = {
      ...incident,
      keys: this.#keys,
      stores: summary.stores,
      nodes: summary.nodes,
      storesTotal: summary.storesTotal,
      nodesTotal: summary.nodesTotal,
      openedUnixMillis: summary.openedUnixMillis,
      lastFindingUnixMillis: summary.lastFindingUnixMillis,
    };
    view.facts = summary.incidentFacts;
    return Object.assign(view, describeIncident(view, summary.facts));
  }
}

function* membersOf(entry: IncidentEntry): Generator<[Finding, FindingFacts]> {
  for (const [id, finding] of entry.members) yield [finding, entry.facts.get(id)!];
}

/** What the keys did, worded to follow "N keys" (or "1 key") as a sentence. */
const CLASS_TITLE: Record<FindingClass, string> = {
  cross_store_duplicate: 'executed twice in different dedup stores',
  same_store_duplicate: 'executed twice in one dedup store',
  absorbed_duplicate: 'executed twice, each repeat caught by a dedup store downstream',
  suspected_duplicate: 'ran again after a failed attempt whose effect is unknown',
  key_collision: 'shared across tenants',
  scope_violation: 'whose retries reach more than one dedup store',
};

/** What a severity reason adds to the title, worded to follow the class's. */
const REASON_TITLE: Record<SeverityReason, string> = {
  replay_unseen: ' by HTTP status alone, no replay seen at this tier',
};

/** Why the incident is below its class's severity, before the class's advice. */
const REASON_ADVICE: Record<SeverityReason, string> = {
  replay_unseen:
    "Not paged as critical: each repeat was read as an execution from its HTTP response alone (no idempotency.outcome on the span), in one store on one node, and this tier has never shown a replay (Idempotent-Replayed: true) — a replay whose header the HTTP instrumentation did not capture reads the same. OpenTelemetry's HTTP instrumentation captures response headers set with res.setHeader, not those passed to res.writeHead(status, headers): set the replay header with setHeader, or record idempotency.outcome on the span. If these did execute twice:",
};

/**
 * An incident's title and advice, worded from the facts of its keys: what the detector writes on
 * every incident it summarizes, and what a reader of several detectors' parts of one incident
 * writes from their summed facts (`mergeIncidentFacts`, `adviceFactsOf`).
 */
export function describeIncident(
  incident: Incident,
  facts: AdviceFacts,
): Pick<Incident, 'title' | 'advice' | 'adviceSentences'> {
  const advice = incidentAdvice(incident, facts);
  return { title: titleOf(incident, facts), advice: advice.text, adviceSentences: advice.sentences };
}

function incidentAdvice(incident: Incident, facts: AdviceFacts): { text: string; sentences: string[] } {
  const said = adviceSentences(incident.class, { ...facts, event: incident.routingEvent });
  const reason = incident.severityReason;
  const text = said.map((sentence) => sentence.text).join(' ');
  return {
    text: reason === undefined ? text : `${REASON_ADVICE[reason]} ${text}`,
    sentences: [
      ...(reason === undefined ? [] : [`reason_${reason}`]),
      ...said.map((sentence) => sentence.id),
    ],
  };
}

/**
 * The tier as a title names it: the service and its endpoint (`payments /payments`), or, for a
 * tier named after a span because no request span carried its key, what it is named after.
 */
export function tierLabel(service: string, operation: string, method = ''): string {
  if (!isRouteLike(operation)) return `${service}, span ${operation} (no route known)`;
  // A route the span already names with its method (`POST /payments`) is not prefixed again.
  return method === '' || method === '_OTHER' || operation.startsWith(`${method} `)
    ? `${service} ${operation}`
    : `${service} ${method} ${operation}`;
}

/** What a suspected duplicate's keys did, by the evidence they rest on. */
function suspectTitle(facts: AdviceFacts): string {
  if (facts.executionUnseen && !facts.effectUnknown)
    return 'probably executed twice, one execution seen: the spans of the other were lost';
  if (facts.executionUnseen) return 'probably executed twice, not confirmed by the spans';
  return CLASS_TITLE.suspected_duplicate;
}

function titleOf(incident: Incident, facts: AdviceFacts): string {
  const event = incident.routingEvent;
  const where =
    event === null
      ? ''
      : ` during ${event.type.replace('_', ' ')} of ${event.node || event.cluster || event.region}`;
  const keys = incident.keys === 1 ? '1 key' : `${incident.keys} keys`;
  const reason = incident.severityReason === undefined ? '' : REASON_TITLE[incident.severityReason];
  const what = incident.class === 'suspected_duplicate' ? suspectTitle(facts) : CLASS_TITLE[incident.class];
  return `${tierLabel(incident.service, incident.operation, facts.method)}: ${keys} ${what}${reason}${where}`;
}
