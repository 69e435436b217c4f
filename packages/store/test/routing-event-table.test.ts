import type { Attempt, NodeActivity } from '@keyscope/attempts';
import { createDetector, type Detector, type RoutingEvent } from '@keyscope/detector';
import { activity, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyscopeStore } from '../src/index.ts';

const at = (second: number) => TEST_EPOCH_UNIX_MILLIS + second * 1000;

/** A routing event of `service` on `node`, from `from` to `to` (seconds). */
function event(options: {
  service?: string;
  node?: string;
  type?: RoutingEvent['type'];
  from: number;
  to: number;
}): RoutingEvent {
  const { service = 'payments', node = 'a', type = 'node_down', from, to } = options;
  return {
    id: `re_${type}_${service}_${node}_${from}`,
    type,
    service,
    node,
    cluster: 'c1',
    region: 'r1',
    startUnixMillis: at(from),
    endUnixMillis: at(to),
    ended: true,
    description: `${node} of ${service}: ${type} from ${from} s to ${to} s`,
  };
}

/** Nodes a, b and c of payments serving 0–120 s, a silent from 60 to 70 s; k1 ran on a, then on b. */
const failover = {
  traffic: [
    ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
    ...activity({ node: 'a', fromSecond: 70, toSecond: 120 }),
    ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
    ...activity({ node: 'c', fromSecond: 0, toSecond: 120 }),
  ],
  attempts: (tenant = ''): Attempt[] => [
    server({ key: 'k1', tenant, node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
    server({ key: 'k1', tenant, node: 'b', store: 'B', at: 61 }),
  ],
};

let store: KeyscopeStore;
let detector: Detector;

beforeEach(() => {
  store = new KeyscopeStore({ path: ':memory:' });
  detector = createDetector(undefined, { attemptLog: store.attemptLog });
});

afterEach(() => store.close());

/** Runs the detector over `attempts` and `traffic` and stores what it reported, as serve does. */
function detect(attempts: Attempt[], traffic: NodeActivity[], nowSecond = 200): void {
  store.transaction(() => {
    store.applyChanges(
      detector.ingest({ attempts, activity: traffic, invalid: { outcome: 0, hit: 0, scope: 0 } }),
    );
    store.applyChanges(detector.tick(at(nowSecond)));
  });
}

const write = (events: RoutingEvent[], retracted: string[] = []) =>
  store.transaction(() =>
    store.applyChanges({
      findings: [],
      retractedFindingIds: [],
      incidents: [],
      retractedIncidentIds: [],
      routingEvents: events,
      retractedRoutingEventIds: retracted,
    }),
  );

const ids = (filter: Parameters<KeyscopeStore['routingEvents']['list']>[0] = {}) =>
  store.routingEvents.list(filter, { limit: 500 }).items.map((e) => e.id);

describe('routing events', () => {
  it('stores the events the detector infers, each with the incidents grouped under it', () => {
    detect(failover.attempts(), failover.traffic);
    const [stored] = store.routingEvents.list({}, { limit: 10 }).items;
    const [incident] = store.incidents.list({}, { limit: 10 }).items;
    expect(stored).toMatchObject({ type: 'node_down', service: 'payments', node: 'a', ended: true });
    expect(stored!.description).toContain('a');
    expect(incident!.routingEvent!.id).toBe(stored!.id);
    expect(stored!.incidentIds).toEqual([incident!.id]);
  });

  it('keeps an event with no incident: a node that went down while nothing ran twice', () => {
    detect([], failover.traffic);
    expect(store.routingEvents.list({}, { limit: 10 }).items).toMatchObject([
      { type: 'node_down', node: 'a', incidentIds: [] },
    ]);
  });

  it('deletes an event that late activity disproves, and the incidents no longer cite one', () => {
    const late = (x: NodeActivity) => x.placement.node === 'a' && x.bucketStartUnixMillis >= at(60);
    detect(
      failover.attempts(),
      failover.traffic.filter((x) => !late(x)),
    );
    expect(ids()).toHaveLength(1);
    detect(
      [],
      [...activity({ node: 'a', fromSecond: 60, toSecond: 120 }), ...failover.traffic.filter(late)],
      201,
    );
    expect(ids()).toEqual([]);
    expect(store.incidents.list({}, { limit: 10 }).items).toMatchObject([{ routingEvent: null }]);
  });

  it('filters by type, service and a window that overlaps the time range', () => {
    write([
      event({ from: 10, to: 20 }),
      event({ type: 'latency_spike', node: 'b', from: 30, to: 45 }),
      event({ service: 'ledger', from: 50, to: 60 }),
    ]);
    expect(ids({ type: 'latency_spike' })).toEqual(['re_latency_spike_payments_b_30']);
    expect(ids({ service: 'ledger' })).toEqual(['re_node_down_ledger_a_50']);
    // Overlapping 20–31 s: the first ends at 20 s, the second starts at 30 s.
    expect(ids({ sinceUnixMillis: at(20), untilUnixMillis: at(31) })).toEqual([
      're_latency_spike_payments_b_30',
      're_node_down_payments_a_10',
    ]);
    expect(ids({ sinceUnixMillis: at(21), untilUnixMillis: at(30) })).toEqual([]);
  });

  it('pages newest first with a cursor that a revised window does not move', () => {
    write([
      event({ from: 10, to: 20 }),
      event({ node: 'b', from: 30, to: 40 }),
      event({ node: 'c', from: 50, to: 60 }),
    ]);
    const first = store.routingEvents.list({}, { limit: 2 });
    expect(first.items.map((e) => e.node)).toEqual(['c', 'b']);
    // The first event's window grows: an upsert, its place in the list unchanged.
    write([{ ...event({ from: 10, to: 20 }), endUnixMillis: at(25) }]);
    const second = store.routingEvents.list({}, { limit: 2, cursor: first.nextCursor! });
    expect(second.items).toMatchObject([{ node: 'a', endUnixMillis: at(25) }]);
    expect(second.nextCursor).toBeNull();
  });

  it('shows a tenant the events of services where it has a finding, citing only its incidents', () => {
    detect(failover.attempts('acme'), failover.traffic);
    write([event({ service: 'ledger', from: 10, to: 20 })]);
    const [stored] = store.routingEvents.list({ service: 'payments' }, { limit: 10 }).items;
    expect(stored!.incidentIds).toHaveLength(1);
    expect(store.routingEvents.list({ tenant: 'acme' }, { limit: 10 }).items).toEqual([stored]);
    expect(store.routingEvents.list({ tenant: 'globex' }, { limit: 10 }).items).toEqual([]);
  });

  it('lists a tenant an event of its service without the incidents of other tenants', () => {
    detect(failover.attempts('acme'), failover.traffic);
    // globex has a finding of payments elsewhere in time, under no routing event.
    detect(
      [
        server({ key: 'k2', tenant: 'globex', node: 'b', store: 'B', at: 100 }),
        server({ key: 'k2', tenant: 'globex', node: 'c', store: 'C', at: 101 }),
      ],
      [],
      201,
    );
    expect(store.routingEvents.list({ tenant: 'globex' }, { limit: 10 }).items).toMatchObject([
      { node: 'a', incidentIds: [] },
    ]);
  });

  it('purges events whose window ended before the records’ retention, with the rest', () => {
    write([event({ from: 10, to: 20 }), event({ node: 'b', from: 30, to: 40 })]);
    store.purge({ attemptsBeforeUnixMillis: 0, recordsBeforeUnixMillis: at(30), maxRows: 100 });
    expect(ids()).toEqual(['re_node_down_payments_b_30']);
  });

  it('purges events no incident cites when the database is over its size bound, and keeps those an open incident cites', () => {
    detect(failover.attempts(), failover.traffic);
    const cited = ids();
    write(Array.from({ length: 200 }, (_, i) => event({ node: `n${i}`, from: 300 + i, to: 301 + i })));
    expect(ids()).toHaveLength(201);
    const purge = store.purgeToSize({ maxBytes: 1, maxRows: 1_000 });
    expect(purge.routingEvents).toBe(200);
    expect(ids()).toEqual(cited);
  });
});
