import type { Attempt } from '@keyscope/attempts';
import { activity, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { type DetectorConfig, defaultDetectorConfig } from '../../src/config.ts';
import { Changes } from '../../src/detector-changes.ts';
import { findingId } from '../../src/ids.ts';
import { FindingsLedger } from '../../src/incidents/findings-ledger.ts';
import { IncidentBook } from '../../src/incidents/incidents.ts';
import { RoutingInference } from '../../src/routing/routing-inference.ts';
import { evaluateKey, type FindingDraft } from '../../src/rules/evaluate-key.ts';

function ledgerOf(overrides: Partial<DetectorConfig> = {}) {
  const config = { ...defaultDetectorConfig(), ...overrides };
  const routing = new RoutingInference(config);
  const book = new IncidentBook(config);
  const ledger = new FindingsLedger(book, routing, config);
  const draftsOf = (attempts: Attempt[]): FindingDraft[] =>
    evaluateKey(attempts[0]!.key, attempts, (service) => routing.eventsOf(service), config);
  return { ledger, book, routing, draftsOf };
}

/** One key executed once on each of `nodes` node stores of payments, a second apart. */
function executions(key: string, nodes: number): Attempt[] {
  return Array.from({ length: nodes }, (_, i) => server({ key, node: `payments-${i}`, at: i }));
}

describe('FindingsLedger', () => {
  it('reports a new finding placed in its incident, and not again when the key is judged unchanged', () => {
    const { ledger, draftsOf } = ledgerOf();
    const drafts = draftsOf(executions('k1', 2));
    const first = new Changes();
    ledger.apply('k1', drafts, first);

    const [finding] = first.result().findings;
    expect(finding).toMatchObject({ key: 'k1', class: 'cross_store_duplicate' });
    expect(finding!.incidentId).toBe(first.result().incidents[0]!.id);
    expect(ledger.all()).toEqual([finding]);

    const again = new Changes();
    ledger.apply('k1', drafts, again);
    expect(again.result().findings).toEqual([]);
  });

  it('reports the finding again when its evidence changed what it says', () => {
    const { ledger, draftsOf } = ledgerOf();
    ledger.apply('k1', draftsOf(executions('k1', 2)), new Changes());

    const changes = new Changes();
    ledger.apply('k1', draftsOf(executions('k1', 3)), changes);

    expect(changes.result().findings).toMatchObject([{ key: 'k1', executions: 3 }]);
  });

  it("retracts the key's findings no draft names any more, and the incident left empty", () => {
    const { ledger, draftsOf } = ledgerOf();
    const placed = new Changes();
    ledger.apply('k1', draftsOf(executions('k1', 2)), placed);
    const incidentId = placed.result().incidents[0]!.id;

    const changes = new Changes();
    ledger.apply('k1', [], changes);

    expect(changes.result()).toMatchObject({
      findings: [],
      retractedFindingIds: [findingId('cross_store_duplicate', 'k1')],
      retractedIncidentIds: [incidentId],
    });
    expect(ledger.size).toBe(0);
  });

  it('settles an incident at once when its service has no activity to wait for', () => {
    const { ledger, draftsOf } = ledgerOf();
    const changes = new Changes();
    ledger.apply('k1', draftsOf(executions('k1', 2)), changes);

    expect(changes.result().incidents[0]!.settled).toBe(true);
  });

  it('settles an incident once activity is closed past its repeat plus the detection horizon', () => {
    const { ledger, routing, book, draftsOf } = ledgerOf();
    routing.record(activity({ fromSecond: 0, toSecond: 3 }));
    ledger.apply('k1', draftsOf(executions('k1', 2)), new Changes());
    const early = new Changes();
    ledger.settle(early);
    expect(book.all()[0]!.settled).toBe(false);

    routing.record(activity({ fromSecond: 3, toSecond: 30 }));
    const later = new Changes();
    ledger.settle(later);

    expect(later.result().incidents).toMatchObject([{ settled: true }]);
  });

  it('counts the store and node names its lists leave out, as each list grows and once', () => {
    const { ledger, book, draftsOf } = ledgerOf({ maxStoresPerFinding: 1 });
    ledger.apply('k1', draftsOf(executions('k1', 3)), new Changes());
    expect(book.overflow).toMatchObject({ findingStores: 2, findingNodes: 2 });

    ledger.apply('k1', draftsOf(executions('k1', 3)), new Changes());
    expect(book.overflow).toMatchObject({ findingStores: 2, findingNodes: 2 });

    ledger.apply('k1', draftsOf(executions('k1', 5)), new Changes());
    expect(book.overflow).toMatchObject({ findingStores: 4, findingNodes: 4 });
  });

  it('names the keys of the findings of given services, and forgets findings last seen before a cutoff', () => {
    const { ledger, draftsOf } = ledgerOf();
    const early = executions('k1', 2);
    const late = [
      server({ key: 'k2', node: 'payments-0', at: 100 }),
      server({ key: 'k2', node: 'payments-1', at: 101 }),
    ];
    ledger.apply('k1', draftsOf(early), new Changes());
    ledger.apply('k2', draftsOf(late), new Changes());
    const keys = new Set<string>();
    ledger.keysOfServices(new Set(['payments']), keys);
    expect([...keys].sort()).toEqual(['k1', 'k2']);

    ledger.forgetBefore(late[0]!.startUnixMillis);

    expect(ledger.all().map((f) => f.key)).toEqual(['k2']);
  });

  it('restores a finding a previous run reported, so that judging its key again reports no change', () => {
    const previous = ledgerOf();
    const drafts = previous.draftsOf(executions('k1', 2));
    previous.ledger.apply('k1', drafts, new Changes());
    const { ledger } = ledgerOf();

    ledger.restore(previous.ledger.all()[0]!, new Changes());
    const changes = new Changes();
    ledger.apply('k1', drafts, changes);

    expect(changes.result().findings).toEqual([]);
    expect(ledger.all()).toEqual(previous.ledger.all());
  });
});
