import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createDetector,
  defaultDetectorConfig,
  type Incident,
  type RoutingEvent,
  tierName,
} from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { server } from '@keyscope/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { type IncidentRecord, recordsOfChanges } from '../../src/kafka/incident-records.ts';
import { IncidentsMaterializer, sumScopeStates } from '../../src/kafka/incidents-materializer.ts';
import { ReplayHeaderLog } from '../../src/pipeline/replay-header-log.ts';
import { duplicateOf, nodeDownUntil } from './detected-changes.ts';

const dir = mkdtempSync(join(tmpdir(), 'keyscope-materializer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function materializer(path: string, alerts: { changed: Incident[]; retracted: string[] }) {
  const store = new KeyscopeStore({ path });
  const view = new IncidentsMaterializer({
    store,
    detectorConfig: defaultDetectorConfig(),
    alerts: () => ({
      incidentsChanged: (incidents) => alerts.changed.push(...incidents),
      incidentsRetracted: (ids) => alerts.retracted.push(...ids),
    }),
  });
  return { store, view };
}

describe("the serve role's copy of the incidents topic", () => {
  it("serves one incident adding up the keys every partition reports, and each key's evidence", () => {
    const alerts = { changed: [] as Incident[], retracted: [] as string[] };
    const { store, view } = materializer(join(dir, 'merge.db'), alerts);
    const first = duplicateOf('k1');
    const second = duplicateOf('k2');
    const incidentId = first.incidents[0]!.id;
    expect(second.incidents[0]!.id).toBe(incidentId);
    view.apply('incidents', 0, recordsOfChanges(first, 4), 10);
    view.apply('incidents', 1, recordsOfChanges(second, 7), 20);
    expect(store.incidents.get(incidentId)).toMatchObject({ keys: 2, status: 'open' });
    expect(
      store.findings
        .list({}, { limit: 10 })
        .items.map((f) => f.key)
        .sort(),
    ).toEqual(['k1', 'k2']);
    expect(store.attemptsOfKey('k1')).toHaveLength(2);
    expect(alerts.changed.at(-1)).toMatchObject({ id: incidentId, keys: 2 });

    // Partition 7's detector retracts its part (its finding moved elsewhere): one key left.
    const retraction: IncidentRecord[] = [
      { type: 'finding', id: second.findings[0]!.id, finding: null },
      { type: 'incident', id: incidentId, partition: 7, incident: null },
    ];
    view.apply('incidents', 1, retraction, 21);
    expect(store.incidents.get(incidentId)).toMatchObject({ keys: 1 });
    expect(store.findings.ofKey('k2')).toEqual([]);

    view.apply('incidents', 0, [{ type: 'incident', id: incidentId, partition: 4, incident: null }], 11);
    expect(store.incidents.get(incidentId)).toBeUndefined();
    expect(alerts.retracted).toEqual([incidentId]);
    store.close();
  });

  it("drops the parts a partition's previous owner left behind once its new owner lists what it holds", () => {
    const alerts = { changed: [] as Incident[], retracted: [] as string[] };
    const { store, view } = materializer(join(dir, 'takeover.db'), alerts);
    const kept = duplicateOf('k1');
    const stale = duplicateOf('k2');
    const keptIncident = kept.incidents[0]!;
    // The previous owner of partition 3 published k2's incident part under another incident id
    // (attributed before the event that explains it was known), and was killed before moving it.
    const staleIncident: Incident = { ...stale.incidents[0]!, id: 'inc_stale' };
    const old: Incident = {
      ...stale.incidents[0]!,
      id: 'inc_old',
      openedUnixMillis: keptIncident.openedUnixMillis - 2 * 24 * 60 * 60 * 1000,
    };
    view.apply(
      'incidents',
      0,
      [
        { type: 'incident', id: keptIncident.id, partition: 3, incident: keptIncident },
        { type: 'incident', id: 'inc_stale', partition: 3, incident: staleIncident },
        { type: 'incident', id: 'inc_old', partition: 3, incident: old },
        { type: 'incident', id: 'inc_stale', partition: 4, incident: staleIncident },
      ],
      0,
    );
    expect(store.incidents.get('inc_stale')).toMatchObject({ keys: 2 });
    // The new owner, caught up, holds a part of the first incident only; it can judge incidents
    // opened within its window, which the two-day-old one was not.
    view.apply(
      'incidents',
      0,
      [
        {
          type: 'parts',
          partition: 3,
          incidentIds: [keptIncident.id],
          sinceUnixMillis: keptIncident.openedUnixMillis - 24 * 60 * 60 * 1000,
        },
      ],
      1,
    );
    expect(store.incidents.get(keptIncident.id)).toMatchObject({ keys: 1 });
    expect(store.incidents.get('inc_stale')).toMatchObject({ keys: 1 });
    expect(store.incidentParts.heldBy(3).map((held) => held.incidentId)).toEqual(
      [keptIncident.id, 'inc_old'].sort(),
    );
    expect(alerts.changed.at(-1)).toMatchObject({ id: 'inc_stale', keys: 1 });

    // Partition 4's new owner holds nothing: the incident that was only its part is retracted.
    view.apply('incidents', 1, [{ type: 'parts', partition: 4, incidentIds: [], sinceUnixMillis: 0 }], 0);
    view.apply('incidents', 0, [{ type: 'parts', partition: 3, incidentIds: [], sinceUnixMillis: 0 }], 2);
    expect(store.incidents.get('inc_stale')).toBeUndefined();
    expect(store.incidents.get('inc_old')).toBeUndefined();
    expect(alerts.retracted).toEqual(['inc_stale', keptIncident.id, 'inc_old']);
    store.close();
  });

  it('keeps one routing event per id whichever partitions publish it, the last version written, until retracted', () => {
    const { store, view } = materializer(join(dir, 'routing-events.db'), { changed: [], retracted: [] });
    const [early] = nodeDownUntil(20);
    const [late] = nodeDownUntil(25);
    expect(late!.id).toBe(early!.id);
    expect(late!.endUnixMillis).toBeGreaterThan(early!.endUnixMillis);
    const event = (routingEvent: RoutingEvent | null): IncidentRecord => ({
      type: 'routing-event',
      id: early!.id,
      routingEvent,
    });
    const listed = () => store.routingEvents.list({}, { limit: 10 }).items;
    // Attempts partitions 4 and 7 infer it from the same activity; their records reach two
    // incidents partitions.
    view.apply('incidents', 0, [event(early!)], 10);
    view.apply('incidents', 1, [event(early!)], 20);
    expect(listed()).toEqual([{ ...early, incidentIds: [] }]);
    // One of them reads on and revises the window.
    view.apply('incidents', 1, [event(late!)], 21);
    expect(listed()).toEqual([{ ...late, incidentIds: [] }]);
    // Late activity disproves it, on every partition: a tombstone deletes it.
    view.apply('incidents', 0, [event(null)], 11);
    expect(listed()).toEqual([]);
    store.close();
  });

  it('continues after a restart from the offsets stored with the data', () => {
    const path = join(dir, 'offsets.db');
    const first = materializer(path, { changed: [], retracted: [] });
    expect(first.view.nextOffset('incidents', 2)).toBeUndefined();
    first.view.apply('incidents', 2, recordsOfChanges(duplicateOf('k1'), 0), 41);
    first.store.close();
    const again = materializer(path, { changed: [], retracted: [] });
    expect(again.view.nextOffset('incidents', 2)).toBe(42);
    expect(again.store.counts().findings).toBe(1);
    again.store.close();
  });

  it('adds up the scope report counts of every partition', () => {
    const { store, view } = materializer(join(dir, 'scope.db'), { changed: [], retracted: [] });
    const state = (keys: number) => [
      {
        tier: 'payments /payments',
        service: 'payments',
        operation: '/payments',
        declared: { node: keys },
        keys,
        spread: [keys - 1, 1, 0, 0],
      },
    ];
    view.apply('incidents', 0, [{ type: 'scope', partition: 0, scope: state(3) }], 0);
    view.apply('incidents', 0, [{ type: 'scope', partition: 1, scope: state(5) }], 1);
    expect(sumScopeStates([state(3), state(5)])).toEqual(
      state(8).map((row) => ({ ...row, spread: [6, 2, 0, 0] })),
    );
    expect(view.scopeView.scopeReport()).toEqual([
      expect.objectContaining({
        service: 'payments',
        keys: 8,
        declaredScope: 'node',
        keysSpanning: expect.any(Object),
      }),
    ]);
    store.close();
  });

  it('serves the tiers past detector.maxTiers of every partition as one overflow bucket, their count the union', () => {
    const { store, view } = materializer(join(dir, 'overflow.db'), { changed: [], retracted: [] });
    const partitionState = (first: number) => {
      const detector = createDetector({ ...defaultDetectorConfig(), maxTiers: 1 });
      detector.ingest({
        attempts: Array.from({ length: 6 }, (_, i) =>
          server({ key: `k${first + i}`, node: 'a', store: 'A', operation: `POST /op-${first + i}`, at: i }),
        ),
        activity: [],
        invalid: { outcome: 0, hit: 0, scope: 0 },
      });
      return detector.scopeState();
    };
    // Partitions 0 and 1 saw tiers op-1..op-5 and op-4..op-8 past their cap: 8 distinct in all.
    view.apply('incidents', 0, [{ type: 'scope', partition: 0, scope: partitionState(0) }], 0);
    view.apply('incidents', 0, [{ type: 'scope', partition: 1, scope: partitionState(3) }], 1);
    expect(view.scopeView.scopeOverflow()).toMatchObject({ tiers: 8, keys: 10 });
    expect(view.scopeView.scopeReport().map((row) => row.operation)).toEqual(['POST /op-0', 'POST /op-3']);
    store.close();
  });

  it('adds up the evidence coverage counts of every partition', () => {
    const { store, view } = materializer(join(dir, 'coverage.db'), { changed: [], retracted: [] });
    const state = (arrivals: number, decided: number) => [
      {
        tier: 'payments /payments',
        service: 'payments',
        operation: '/payments',
        declared: {},
        keys: arrivals,
        spread: [arrivals, 0, 0, 0],
        coverage: [arrivals, decided, 0, 0, arrivals, decided],
      },
    ];
    view.apply('incidents', 0, [{ type: 'scope', partition: 0, scope: state(10, 1) }], 0);
    view.apply('incidents', 0, [{ type: 'scope', partition: 1, scope: state(30, 3) }], 1);
    expect(sumScopeStates([state(10, 1), state(30, 3)])[0]!.coverage).toEqual([40, 4, 0, 0, 40, 4]);
    expect(view.scopeView.scopeReport()[0]!.coverage).toMatchObject({
      arrivals: 40,
      arrivalsWithDecision: 4,
      arrivalsWithDecisionRatio: 0.1,
      requestsWithSendRatio: null,
      keysFullyVisibleRatio: 0.1,
    });
    store.close();
  });

  it('adds up the replay header counts of every partition, and logs a tier missing it once', () => {
    const store = new KeyscopeStore({ path: join(dir, 'replay-header.db') });
    const lines: string[] = [];
    const detectorConfig = { ...defaultDetectorConfig(), replayHeaderMinRepeats: 10 };
    const view = new IncidentsMaterializer({
      store,
      detectorConfig,
      alerts: () => undefined,
      replayHeaderLog: new ReplayHeaderLog({ info: (line) => lines.push(line), error: () => {} }, 10),
    });
    // Six and then four repeats on one node, none replayed: missing only once they add up to ten.
    const state = (repeats: number) => [
      {
        tier: tierName('charges', 'POST'),
        service: 'charges',
        operation: 'POST',
        declared: {},
        keys: repeats,
        spread: [repeats, 0, 0, 0],
        coverage: [0, 0, 0, 0, repeats, repeats, 0, 0, 0, repeats],
      },
    ];
    view.apply('incidents', 0, [{ type: 'scope', partition: 0, scope: state(6) }], 0);
    expect(view.scopeView.scopeReport()[0]!.replayHeader).toMatchObject({
      verdict: 'unconfirmed',
      repeats: 6,
    });
    view.apply('incidents', 0, [{ type: 'scope', partition: 1, scope: state(4) }], 1);
    expect(view.scopeView.scopeReport()[0]!.replayHeader).toMatchObject({ verdict: 'missing', repeats: 10 });
    view.apply('incidents', 0, [{ type: 'scope', partition: 1, scope: state(5) }], 2);
    expect(lines.filter((line) => line.includes('charges POST: replay header missing'))).toHaveLength(1);
    store.close();
  });
});
