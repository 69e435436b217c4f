import { SCOPE_LEVELS, type ScopeLevel } from '@keyscope/attempts';
import { describe, expect, it } from 'vitest';
import { type IncidentSummary, IncidentTally } from '../../src/incidents/incident-tally.ts';
import { type AdviceFacts, type FindingFacts, mostDeclared, SPREAD_ORDER } from '../../src/rules/advice.ts';
import { type Finding, RETRY_AFTER } from '../../src/rules/finding.ts';

/** A seeded generator, so a failure names the sequence that caused it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const CAUSES: readonly Finding['cause'][] = [
  'race',
  'ttl_expired',
  'cross_tenant_replay',
  'shared_key',
  'effect_unknown',
  'execution_unseen',
  null,
];

function member(next: () => number, id: number): [Finding, FindingFacts] {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const stores = [...new Set([pick(['A', 'B', 'C', 'D']), pick(['A', 'B', 'C', 'D'])])];
  const first = 1_000 + Math.floor(next() * 500);
  const declared: Partial<Record<ScopeLevel, number>> = {};
  if (next() < 0.7) declared[pick(SCOPE_LEVELS)] = 1 + Math.floor(next() * 3);
  const finding = {
    id: `f${id}`,
    stores,
    nodes: stores.map((store) => `node-${store}`),
    firstSeenUnixMillis: first,
    repeatUnixMillis: first + Math.floor(next() * 200),
    lastSeenUnixMillis: first + 200 + Math.floor(next() * 300),
  } as unknown as Finding;
  const facts: FindingFacts = {
    stores,
    nodes: stores.map((store) => `node-${store}`),
    executionStores: 1 + Math.floor(next() * stores.length),
    method: pick(['POST', 'PUT', '']),
    declared,
    spread: pick(SPREAD_ORDER),
    proxy: next() < 0.3,
    cause: pick(CAUSES),
    gapMillis: Math.floor(next() * 10_000),
    callerWaitMillis: next() < 0.6 ? 1_000 + Math.floor(next() * 3_000) : null,
    retryAfter: pick(RETRY_AFTER),
    executionNode: pick(['node-a', 'node-b', '']),
    executionMillis: next() < 0.8 ? Math.floor(next() * 5_000) : null,
    executionLost: next() < 0.2,
    firstInEvent: next() < 0.5,
    outlived: next() < 0.5 ? next() < 0.5 : null,
    clipped: next() < 0.3,
  };
  return [finding, facts];
}

/** What a summary says, the advice's facts read from its plain-data facts. */
type SummaryView = Omit<IncidentSummary, 'incidentFacts'>;

function view(summary: IncidentSummary): SummaryView {
  const { incidentFacts: _, facts, ...rest } = summary;
  return { ...rest, facts };
}

/** What the summary is by definition: every member walked. */
function recomputed(members: Iterable<[Finding, FindingFacts]>): SummaryView {
  const stores = new Set<string>();
  const nodes = new Set<string>();
  const declared: Partial<Record<ScopeLevel, number>> = {};
  let opened = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  let widest = 0;
  let proxies = 0;
  const causes = new Set<Finding['cause']>();
  let longestGapMillis = 0;
  const waits: number[] = [];
  const executionsByNode = new Map<string, number[]>();
  let outlived = 0;
  let clipped = 0;
  let judged = 0;
  let known = 0;
  let lost = 0;
  let firstInEvent = 0;
  let keys = 0;
  const storeCounts: number[] = [];
  const executionStoreCounts: number[] = [];
  const spreadCounts: AdviceFacts['spreadCounts'] = {};
  const methods = new Map<string, number>();
  const retryAfter = Object.fromEntries(RETRY_AFTER.map((r) => [r, 0])) as AdviceFacts['retryAfter'];
  for (const [finding, facts] of members) {
    keys++;
    storeCounts.push(facts.stores.length);
    executionStoreCounts.push(facts.executionStores);
    spreadCounts[facts.spread] = (spreadCounts[facts.spread] ?? 0) + 1;
    retryAfter[facts.retryAfter]++;
    methods.set(facts.method, (methods.get(facts.method) ?? 0) + 1);
    if (facts.executionLost) lost++;
    if (facts.firstInEvent) firstInEvent++;
    if (facts.callerWaitMillis !== null) waits.push(Math.round(facts.callerWaitMillis / 100) * 100);
    if (facts.executionMillis !== null) {
      const list = executionsByNode.get(facts.executionNode) ?? [];
      list.push(Math.round(facts.executionMillis / 100) * 100);
      executionsByNode.set(facts.executionNode, list);
      known++;
      if (facts.clipped) clipped++;
    }
    if (facts.outlived !== null) {
      judged++;
      if (facts.outlived) outlived++;
    }
    for (const store of finding.stores) stores.add(store);
    for (const node of finding.nodes) nodes.add(node);
    // An incident opens when its first key ran again, not at that key's first attempt.
    opened = Math.min(opened, finding.repeatUnixMillis);
    last = Math.max(last, finding.lastSeenUnixMillis);
    for (const scope of SCOPE_LEVELS) {
      if (facts.declared[scope] !== undefined)
        declared[scope] = (declared[scope] ?? 0) + facts.declared[scope];
    }
    widest = Math.max(widest, SPREAD_ORDER.indexOf(facts.spread));
    if (facts.proxy) proxies++;
    causes.add(facts.cause);
    longestGapMillis = Math.max(longestGapMillis, facts.gapMillis);
  }
  // The node with most first executions, ties to the first name.
  const busiest =
    [...executionsByNode.entries()].sort(
      ([a, x], [b, y]) => y.length - x.length || (a < b ? -1 : 1),
    )[0]?.[0] ?? '';
  const declaredInOrder = Object.fromEntries(
    SCOPE_LEVELS.filter((s) => declared[s] !== undefined).map((s) => [s, declared[s]]),
  );
  // The most common method named, ties to the first name.
  const method =
    [...methods]
      .filter(([name]) => name !== '')
      .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))[0]?.[0] ?? '';
  const adviceFacts: AdviceFacts = {
    keys,
    method,
    stores: stores.size,
    storesPerKey: { min: Math.min(...storeCounts), max: Math.max(...storeCounts) },
    executionStoresPerKey: { min: Math.min(...executionStoreCounts), max: Math.max(...executionStoreCounts) },
    declared: declaredInOrder,
    declaredScope: mostDeclared(declaredInOrder),
    spread: SPREAD_ORDER[widest]!,
    spreadCounts,
    proxies,
    race: causes.has('race'),
    ttl: causes.has('ttl_expired'),
    storeUnknown: causes.has('store_unknown'),
    crossTenantReplay: causes.has('cross_tenant_replay'),
    effectUnknown: causes.has('effect_unknown'),
    executionUnseen: causes.has('execution_unseen'),
    longestGapMillis,
    firstInEvent,
    retryAfter,
    timing: {
      callerWaitMillis: nearestRank(waits, 0.5),
      executionNode: busiest,
      executionP90Millis: nearestRank(executionsByNode.get(busiest) ?? [], 0.9),
      executionNodeCount: executionsByNode.get(busiest)?.length ?? 0,
      known,
      lost,
      clipped,
      outlived,
      judged,
    },
    event: null,
  };
  return {
    stores: [...stores].sort(),
    nodes: [...nodes].sort(),
    storesTotal: stores.size,
    nodesTotal: nodes.size,
    openedUnixMillis: opened,
    lastFindingUnixMillis: last,
    facts: adviceFacts,
  };
}

function nearestRank(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

describe('IncidentTally', () => {
  it('summarizes like a walk over every member, through adds, replacements and removals', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const next = random(seed);
      const tally = new IncidentTally();
      const members = new Map<string, [Finding, FindingFacts]>();
      for (let step = 0; step < 300; step++) {
        const id = Math.floor(next() * 40);
        const present = members.get(`f${id}`);
        if (present !== undefined && next() < 0.4) {
          tally.remove(...present);
          members.delete(`f${id}`);
        } else {
          const placed = member(next, id);
          if (present !== undefined) tally.replace(...present, ...placed);
          else tally.add(...placed);
          members.set(`f${id}`, placed);
        }
        if (members.size > 0 && step % 7 === 0) {
          expect(
            view(tally.summary(() => members.values(), Number.POSITIVE_INFINITY)),
            `seed ${seed}, step ${step}`,
          ).toEqual(recomputed(members.values()));
        }
      }
    }
  });

  it('keeps its times without a walk when a member judged again keeps or extends them', () => {
    const tally = new IncidentTally();
    const next = random(7);
    const [finding, facts] = member(next, 3);
    // The member holding every extreme: the earliest repeat, the latest attempt, the longest gap.
    const holder: [Finding, FindingFacts] = [
      { ...finding, repeatUnixMillis: 0, lastSeenUnixMillis: 10_000 } as Finding,
      { ...facts, gapMillis: 20_000 },
    ];
    const members = [member(next, 1), member(next, 2), holder];
    for (const m of members) tally.add(...m);
    let walked = 0;
    const walk = () => {
      walked++;
      return members;
    };
    // Judged again on a later attempt: the same repeat and gap, its last attempt later.
    const later: [Finding, FindingFacts] = [
      { ...holder[0], lastSeenUnixMillis: 11_000 } as Finding,
      holder[1],
    ];
    tally.replace(...holder, ...later);
    members[2] = later;
    expect(view(tally.summary(walk, Number.POSITIVE_INFINITY))).toEqual(recomputed(members.values()));
    expect(walked).toBe(0);
    // Its repeat moved later: the earliest is walked for, once.
    const moved: [Finding, FindingFacts] = [{ ...later[0], repeatUnixMillis: 5_000 } as Finding, later[1]];
    tally.replace(...later, ...moved);
    members[2] = moved;
    expect(view(tally.summary(walk, Number.POSITIVE_INFINITY))).toEqual(recomputed(members.values()));
    expect(walked).toBe(1);
  });

  it('recomputes the times only after the member holding one leaves', () => {
    const tally = new IncidentTally();
    const next = random(99);
    const members = [member(next, 1), member(next, 2)];
    for (const m of members) tally.add(...m);
    let walked = 0;
    const walk = () => {
      walked++;
      return members;
    };
    tally.summary(walk, Number.POSITIVE_INFINITY);
    expect(walked).toBe(0);
    const earliest = members.reduce((a, b) => (a[0].repeatUnixMillis <= b[0].repeatUnixMillis ? a : b));
    tally.remove(...earliest);
    members.splice(members.indexOf(earliest), 1);
    expect(tally.summary(walk, Number.POSITIVE_INFINITY).openedUnixMillis).toBe(
      members[0]![0].repeatUnixMillis,
    );
    expect(walked).toBe(1);
  });
});
