import type { Incident } from '@keyscope/detector';
import { type AlertEvent, dedupKeyOf, pageOfDedupKey, readAlertEvent } from './alert-event.ts';
import type { AlertedIncidents, AlertOutbox, OutboxEntry } from './alert-outbox.ts';
import { alertmanagerRequest, postableAlert } from './alertmanager-payload.ts';
import type { AlertmanagerSinkConfig, AlertsConfig, SinkConfig } from './alerts-config.ts';
import { buildRequest } from './build-request.ts';
import { DeliveryCounters, type DeliveryCountersSnapshot } from './delivery-counters.ts';
import { type Backoff, backoffOf, retryCeilingMillis, retryDelayMillis } from './retry-backoff.ts';
import { type SendResult, sendRequest } from './send-request.ts';
import { meetsSeverity } from './severity-order.ts';
import type { SinkRequest } from './sink-request.ts';

export interface AlerterOptions {
  /** Where deliveries are enqueued and tracked: the store's outbox (its SQLite table). */
  outbox: AlertOutbox;
  /** The stored incidents: what is paged reflects what people did to them (a manual resolve). */
  incidents: AlertedIncidents;
  config: AlertsConfig;
  /** Base URL of keyscope's web page; every message links to `${publicUrl}/incidents/${id}`. */
  publicUrl: string;
  now?: () => number;
  fetch?: typeof fetch;
  /** In [0, 1): the retry jitter. Tests pass a constant. */
  random?: () => number;
  /** Failures of the background loop itself (e.g. the database is locked); the loop carries on. */
  onError?: (error: unknown) => void;
}

/**
 * What one `deliverDue` pass did with the entries it took, by outcome. `late`: requests still
 * unanswered after `requestTimeoutMillis`, left open; their outcome is recorded (and counted) when
 * the sink answers or `lateRequestTimeoutMillis` aborts them.
 */
export interface DeliveryPassResult {
  delivered: number;
  retried: number;
  abandoned: number;
  deferred: number;
  late: number;
}

export interface Alerter {
  /**
   * Enqueues, for every sink whose `minSeverity` the incident meets, a trigger (once per incident
   * and sink) and, when the incident is resolved, a resolve (once). An incident that reopens after
   * its resolve was enqueued is paged again: a trigger of its next page, later resolved in turn.
   * Whether it is open again is read from the store (a manual resolve holds until the incident
   * gains keys, whatever the detector says), so call it after the store has written them. Synchronous,
   * so the pipeline calls it inside the SQLite transaction that stores the incidents: the page is
   * enqueued if and only if the incident is committed. Upserting an incident again enqueues nothing
   * new. An incident not yet settled (its routing attribution may still regroup it) is not paged
   * until the detector reports it settled. Returns the number of entries enqueued.
   */
  incidentsChanged(incidents: readonly Incident[]): number;
  /**
   * Enqueues a resolve for retracted incidents (their findings moved to another incident) that
   * already have a trigger, so no page stays open for an incident that no longer exists. Reads
   * the incidents from the store, so call it inside the transaction *before* the store deletes
   * them. A trigger not yet delivered is dropped instead (see
   * `deliverDue`). Returns the number of entries enqueued.
   */
  incidentsRetracted(incidentIds: readonly string[]): number;
  /**
   * Sends up to `batchSize` due outbox entries: 2xx marks one delivered; a network error, 5xx, 408,
   * 425 or 429 reschedules it (exponential backoff with full jitter, or the sink's Retry-After, up
   * to the page's cap: `criticalRetryCapMillis` for critical incidents, `retryCapMillis` for the
   * others); any other answer abandons it with the error. A request unanswered after
   * `requestTimeoutMillis` is left open and the pass moves on: its page is not sent again while it
   * is open, and the answer, when it comes, is recorded like any other; a request still open after
   * `lateRequestTimeoutMillis` is aborted and its page retried. A sink with `concurrency` requests
   * open (late ones included) gets no more until one ends (its entries are deferred). A resolve
   * waits while its trigger to the same sink is pending. Passes never overlap (calls queue behind
   * each other).
   */
  deliverDue(): Promise<DeliveryPassResult>;
  /**
   * Re-posts the open incidents among `openIncidents` to every Alertmanager sink now (best effort,
   * not through the outbox: a failed re-send is counted and the next one follows an interval
   * later). Only incidents whose trigger that sink already accepted are re-posted, so a re-send
   * never runs ahead of the outbox. Returns the number of alerts accepted.
   */
  refreshOpen(openIncidents: readonly Incident[]): Promise<number>;
  /** Runs `deliverDue`, and each Alertmanager sink's re-send when due, every `pollIntervalMillis`. */
  start(): void;
  /**
   * Stops the loop, waits for the pass in flight (each of its requests bounded by the request
   * timeout), then aborts the late requests still open and records them as failed (their pages
   * are sent again, with the same idempotency key, by the next alerter on this database). No
   * timer or socket is left behind. Safe before `start()` and more than once.
   */
  stop(): Promise<void>;
  /** Deliveries by sink and outcome since creation, for /metrics. */
  snapshot(): DeliveryCountersSnapshot;
}

/** At most this many alerts per re-send request, and open incidents re-sent per interval. */
const REFRESH_CHUNK = 100;
const REFRESH_MAX_INCIDENTS = 10_000;

export function createAlerter(options: AlerterOptions): Alerter {
  const { outbox, config, publicUrl } = options;
  const storedIncidents = options.incidents;
  const clock = options.now ?? Date.now;
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const random = options.random ?? Math.random;
  const onError = options.onError ?? (() => {});
  const sinks = new Map<string, SinkConfig>(config.sinks.map((sink) => [sink.name, sink]));
  const alertmanagers = config.sinks.filter(
    (sink): sink is AlertmanagerSinkConfig => sink.type === 'alertmanager',
  );
  const counters = new DeliveryCounters(config.sinks.map((sink) => sink.name));
  const lastRefresh = new Map<string, number>();
  /**
   * Requests past `requestTimeoutMillis`, still open, by outbox id. In memory only: after a
   * restart nothing is open, and the page is sent again when its entry is due.
   */
  const late = new Map<number, LateRequest>();
  /** Requests open per sink, in a pass or late: a slow sink gets at most `concurrency` at once. */
  const openRequests = new Map<string, number>();

  let queue: Promise<unknown> = Promise.resolve();
  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let loop: Promise<void> | undefined;

  /** Runs passes one after another, so two never deliver the same entry at once. */
  function serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = queue.then(work);
    queue = run.catch(() => {});
    return run;
  }

  function enqueue(sink: SinkConfig, event: AlertEvent): boolean {
    return outbox.enqueue({
      sink: sink.name,
      dedupKey: dedupKeyOf(event.incident.id, event.action, event.page),
      incidentId: event.incident.id,
      payload: event,
      dueUnixMillis: clock(),
    });
  }

  /**
   * The incident's latest page to the sink (1 for the first, 0 when it was never paged there) and
   * whether that page's resolve was enqueued: one read of the sink's dedup keys for the incident.
   * The highest page stored, not a count: a long-lived incident's first pages may have been purged
   * past retention while later ones remain.
   */
  function latestPage(sink: SinkConfig, incidentId: string): { page: number; resolved: boolean } {
    const keys = outbox.keysStartingWith(sink.name, `${incidentId}:`);
    let page = 0;
    for (const key of keys) page = Math.max(page, pageOfDedupKey(key, incidentId, 'trigger'));
    return { page, resolved: page > 0 && keys.includes(dedupKeyOf(incidentId, 'resolve', page)) };
  }

  function incidentsChanged(incidents: readonly Incident[]): number {
    let enqueued = 0;
    for (const incident of incidents) {
      // Paging it now could page a time-bucket incident whose keys move to a failover's a second
      // later: two pages for one cause. Settling is reported as a change, which pages it then.
      if (incident.settled === false) continue;
      let stored: Incident['status'] | undefined;
      for (const sink of config.sinks) {
        if (!meetsSeverity(incident.severity, sink.minSeverity)) continue;
        let { page, resolved } = latestPage(sink, incident.id);
        if (page === 0) {
          // Always the trigger first, even for an incident first seen already resolved (late
          // spans): the duplicates did happen, and the trigger's lower outbox id keeps it ahead.
          page = 1;
          if (enqueue(sink, { action: 'trigger', incident })) enqueued++;
        } else if (resolved) {
          stored ??= storedIncidents.get(incident.id)?.status ?? incident.status;
          if (stored !== 'open') continue;
          page++;
          if (enqueue(sink, { action: 'trigger', incident, page })) enqueued++;
        }
        if (incident.status === 'resolved' && enqueue(sink, pageEvent('resolve', incident, page))) enqueued++;
      }
    }
    return enqueued;
  }

  function incidentsRetracted(incidentIds: readonly string[]): number {
    let enqueued = 0;
    for (const id of incidentIds) {
      const stored = storedIncidents.get(id);
      if (stored === undefined) continue;
      const incident: Incident = { ...stored, status: 'resolved', resolvedUnixMillis: clock() };
      for (const sink of config.sinks) {
        const { page } = latestPage(sink, id);
        if (page > 0 && enqueue(sink, pageEvent('resolve', incident, page))) enqueued++;
      }
    }
    return enqueued;
  }

  function deliverDue(): Promise<DeliveryPassResult> {
    return serialized(deliveryPass);
  }

  async function deliveryPass(): Promise<DeliveryPassResult> {
    const result: DeliveryPassResult = { delivered: 0, retried: 0, abandoned: 0, deferred: 0, late: 0 };
    // An entry whose request is still open is not sent twice, even if its entry fell due again
    // (the clock moved past the late deadline while the abort was on its way).
    const due = outbox.due(clock(), config.batchSize).filter((entry) => !late.has(entry.id));
    // Entries of one incident and sink go in outbox order (trigger before resolve), one at a
    // time; different incidents and sinks go in parallel.
    const groups = new Map<string, OutboxEntry[]>();
    for (const entry of [...due].sort((a, b) => a.id - b.id)) {
      const key = `${entry.sink}\u0000${entry.incidentId}`;
      const group = groups.get(key);
      if (group === undefined) groups.set(key, [entry]);
      else group.push(entry);
    }
    await runLimited([...groups.values()], config.concurrency, async (group) => {
      for (const entry of group) result[await deliverEntry(entry)]++;
    });
    return result;
  }

  async function deliverEntry(entry: OutboxEntry): Promise<keyof DeliveryPassResult> {
    const sink = sinks.get(entry.sink);
    if (sink === undefined) return abandon(entry, `sink "${entry.sink}" is no longer configured`);
    const event = readAlertEvent(entry.payload);
    if (event === undefined) return abandon(entry, 'the outbox payload is not an alert event');
    const stored = storedIncidents.get(entry.incidentId);
    if (event.action === 'trigger' && stored === undefined) {
      return abandon(entry, 'the incident was retracted or purged before its trigger was delivered');
    }
    // The stored incident is the freshest (more keys since the trigger was enqueued); a resolve of
    // a retracted incident has only the snapshot it was enqueued with.
    const incident = stored ?? event.incident;
    const backoff = backoffOf(incident.severity, config);
    if (event.action === 'resolve') {
      const triggerKey = dedupKeyOf(entry.incidentId, 'trigger', event.page);
      const trigger = outbox
        .deliveriesOf(entry.incidentId)
        .find((row) => row.sink === entry.sink && row.dedupKey === triggerKey);
      if (trigger !== undefined && !trigger.delivered) {
        // The trigger's next attempt is at most one backoff ceiling after its last failure, which
        // was before now; waiting that long puts the resolve behind it without knowing its time.
        const wait = retryCeilingMillis(Math.max(0, trigger.attempts - 1), backoff);
        outbox.markFailed(entry.id, 'waiting for the trigger to this sink to be delivered', clock() + wait);
        counters.add(sink.name, 'deferred');
        return 'deferred';
      }
      if (trigger?.lastError?.startsWith('abandoned') === true) {
        return abandon(entry, 'its trigger was never delivered, so there is nothing to resolve');
      }
    }
    const open = openRequests.get(sink.name) ?? 0;
    if (open >= config.concurrency) {
      // Only late requests get a sink this far: another would add an open socket to the ones it sits on.
      const error = `waiting: ${open} requests to this sink are still open`;
      outbox.markFailed(entry.id, error, clock() + config.requestTimeoutMillis);
      counters.add(sink.name, 'deferred');
      return 'deferred';
    }
    const request = buildRequest(sink, { ...event, incident }, { publicUrl, nowUnixMillis: clock() });
    const abort = new AbortController();
    openRequests.set(sink.name, open + 1);
    const sending = sendRequest(request, {
      fetch: fetchImpl,
      timeoutMillis: config.lateRequestTimeoutMillis,
      nowUnixMillis: clock,
      signal: abort.signal,
    }).finally(() => openRequests.set(sink.name, (openRequests.get(sink.name) ?? 1) - 1));
    const sent =
      config.lateRequestTimeoutMillis === config.requestTimeoutMillis
        ? await sending
        : await within(sending, config.requestTimeoutMillis);
    if (sent !== undefined) return record(entry, backoff, sent);
    // The sink may be acting on the request: sending the page again now could page twice. The
    // entry is rescheduled past the late deadline, so it takes no batch slot while it waits.
    outbox.markFailed(
      entry.id,
      `no answer within ${config.requestTimeoutMillis} ms; waiting up to ${config.lateRequestTimeoutMillis} ms for a late answer`,
      clock() + config.lateRequestTimeoutMillis - config.requestTimeoutMillis,
    );
    const settled = sending
      .then((answer) => {
        record(entry, backoff, answer);
      })
      .catch(onError)
      .finally(() => late.delete(entry.id));
    late.set(entry.id, { abort, settled });
    return 'late';
  }

  /** Records how a request to the entry's sink ended, and counts it. */
  function record(entry: OutboxEntry, backoff: Backoff, sent: SendResult): keyof DeliveryPassResult {
    if (sent.outcome === 'delivered') {
      outbox.markDelivered(entry.id, clock());
      counters.add(entry.sink, 'delivered');
      return 'delivered';
    }
    if (sent.outcome === 'abandon') return abandon(entry, sent.error);
    // A sink's Retry-After is honoured up to the page's cap: a sink asking for an hour (or a year)
    // must not hold a critical page past the schedule the configuration promises.
    const wait = Math.min(
      sent.retryAfterMillis ?? retryDelayMillis(entry.attempts, backoff, random),
      backoff.retryCapMillis,
    );
    outbox.markFailed(entry.id, sent.error, clock() + wait);
    counters.add(entry.sink, 'retried');
    return 'retried';
  }

  function abandon(entry: OutboxEntry, error: string): 'abandoned' {
    outbox.markAbandoned(entry.id, error, clock());
    counters.add(entry.sink, 'abandoned');
    return 'abandoned';
  }

  function send(request: SinkRequest): Promise<SendResult> {
    return sendRequest(request, {
      fetch: fetchImpl,
      timeoutMillis: config.requestTimeoutMillis,
      nowUnixMillis: clock,
    });
  }

  function refreshOpen(openIncidents: readonly Incident[]): Promise<number> {
    return serialized(() => refresh(alertmanagers, openIncidents));
  }

  async function refresh(
    targets: readonly AlertmanagerSinkConfig[],
    incidents: readonly Incident[],
  ): Promise<number> {
    const accepted = new Map<string, Set<string>>();
    /** Sinks that accepted the trigger of the incident's latest page (delivered and not abandoned). */
    const acceptedBy = (id: string): Set<string> => {
      let names = accepted.get(id);
      if (names === undefined) {
        const rows = outbox.deliveriesOf(id);
        names = new Set(
          targets
            .filter((sink) => {
              const key = dedupKeyOf(id, 'trigger', latestPage(sink, id).page);
              const row = rows.find((r) => r.sink === sink.name && r.dedupKey === key);
              return row?.delivered === true && row.lastError?.startsWith('abandoned') !== true;
            })
            .map((sink) => sink.name),
        );
        accepted.set(id, names);
      }
      return names;
    };
    let total = 0;
    for (const sink of targets) {
      lastRefresh.set(sink.name, clock());
      const eligible = incidents.filter(
        (incident) =>
          incident.status === 'open' &&
          meetsSeverity(incident.severity, sink.minSeverity) &&
          acceptedBy(incident.id).has(sink.name),
      );
      for (let start = 0; start < eligible.length; start += REFRESH_CHUNK) {
        const chunk = eligible.slice(start, start + REFRESH_CHUNK);
        const context = { publicUrl, nowUnixMillis: clock() };
        const alerts = chunk.map((incident) => postableAlert(incident, true, sink, context));
        const sent = await send(alertmanagerRequest(sink, alerts));
        if (sent.outcome === 'delivered') {
          counters.add(sink.name, 'refreshed', chunk.length);
          total += chunk.length;
        } else {
          counters.add(sink.name, 'refresh_failed', chunk.length);
        }
      }
    }
    return total;
  }

  function openIncidents(): Incident[] {
    const out: Incident[] = [];
    let cursor: string | undefined;
    do {
      const page = storedIncidents.list({ status: 'open' }, { limit: 500, cursor });
      out.push(...page.items);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined && out.length < REFRESH_MAX_INCIDENTS);
    return out;
  }

  async function tick(): Promise<void> {
    try {
      await deliverDue();
      const now = clock();
      const due = alertmanagers.filter(
        (sink) => now - (lastRefresh.get(sink.name) ?? Number.NEGATIVE_INFINITY) >= sink.resendIntervalMillis,
      );
      if (due.length > 0) await serialized(() => refresh(due, openIncidents()));
    } catch (error) {
      onError(error);
    }
  }

  function schedule(delayMillis: number): void {
    timer = setTimeout(() => {
      timer = undefined;
      loop = tick().finally(() => {
        loop = undefined;
        if (running) schedule(config.pollIntervalMillis);
      });
    }, delayMillis);
    // The service's servers keep the process alive; a pending delivery must not.
    timer.unref();
  }

  return {
    incidentsChanged,
    incidentsRetracted,
    deliverDue,
    refreshOpen,
    start() {
      if (running) return;
      running = true;
      // A pass still finishing from before a stop() schedules the next one itself.
      if (loop === undefined) schedule(0);
    },
    async stop() {
      running = false;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await loop;
      await queue;
      const open = [...late.values()];
      for (const request of open) request.abort.abort();
      await Promise.all(open.map((request) => request.settled));
    },
    snapshot: () => counters.snapshot(),
  };
}

/** A delivery request left open past `requestTimeoutMillis`, waiting for a late answer. */
interface LateRequest {
  abort: AbortController;
  /** Settles once its outcome is recorded. */
  settled: Promise<void>;
}

/** `promise`'s value if it settles within `millis`, else undefined (the promise goes on). */
async function within<T>(promise: Promise<T>, millis: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, millis, undefined);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The event of `action` for the incident's `page` (the first page's events carry no number). */
function pageEvent(action: AlertEvent['action'], incident: Incident, page: number): AlertEvent {
  return page === 1 ? { action, incident } : { action, incident, page };
}

/** Runs `work` over `items` with at most `limit` in flight; rethrows the first failure after all settle. */
async function runLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== undefined) throw failure.error;
}
