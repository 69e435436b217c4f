import { describe, expect, it } from 'vitest';
import type { RoutingEvent } from '../../src/routing/routing-event.ts';
import {
  ADVICE_SENTENCES,
  type AdviceFacts,
  adviceSentences,
  emptyRetryAfter,
} from '../../src/rules/advice.ts';
import type { FindingClass } from '../../src/rules/finding.ts';

/** The facts of an incident of `keys` keys, each in two node stores of one cluster, unless told. */
function facts(overrides: Partial<AdviceFacts> = {}): AdviceFacts {
  const keys = overrides.keys ?? 13;
  return {
    keys,
    method: 'POST',
    stores: 3,
    storesPerKey: { min: 2, max: 2 },
    executionStoresPerKey: { min: 2, max: 2 },
    declared: { node: keys * 2 },
    declaredScope: 'node',
    spread: 'cluster',
    spreadCounts: { cluster: keys },
    proxies: 0,
    race: false,
    ttl: false,
    storeUnknown: false,
    crossTenantReplay: false,
    effectUnknown: false,
    executionUnseen: false,
    longestGapMillis: 0,
    firstInEvent: 0,
    retryAfter: { ...emptyRetryAfter(), timeout: keys },
    timing: {
      callerWaitMillis: 2000,
      executionNode: 'payments-b',
      executionP90Millis: null,
      executionNodeCount: 0,
      known: 0,
      lost: keys,
      clipped: 0,
      outlived: 0,
      judged: 0,
    },
    event: null,
    ...overrides,
  };
}

function ids(findingClass: FindingClass, input: AdviceFacts): string[] {
  return adviceSentences(findingClass, input).map((sentence) => sentence.id);
}

function text(findingClass: FindingClass, input: AdviceFacts): string {
  return adviceSentences(findingClass, input)
    .map((sentence) => sentence.text)
    .join(' ');
}

const SPIKE: RoutingEvent = {
  id: 'rte_1',
  type: 'latency_spike',
  service: 'payments',
  node: 'payments-a',
  cluster: 'c1',
  region: 'us-east-1',
  startUnixMillis: 0,
  endUnixMillis: 15_000,
  ended: true,
  description: '86% of payments server spans took 1 s or more',
};

describe('the advice, sentence by sentence', () => {
  it('says per key how many stores each key ran in, and the incident’s total apart', () => {
    const said = text('cross_store_duplicate', facts());
    expect(said).toContain('Each key executed in 2 different dedup stores (3 stores in all)');
    expect(said).not.toMatch(/one key executed in 3/i);
  });

  it('counts lost first executions as unknown, never as a duration', () => {
    const input = facts();
    expect(ids('cross_store_duplicate', input)).toEqual([
      'executed_in_stores',
      'widen_scope',
      'retried_after_timeout',
      'first_executions_lost',
      'timing_is_context',
    ]);
    const said = text('cross_store_duplicate', input);
    expect(said).toContain('All 13 first executions were of unknown duration');
    expect(said).not.toContain('at p90');
    expect(said).not.toContain('outlived');
  });

  it('counts "X of N" over the incident’s keys and names the rest unknown', () => {
    const input = facts({
      timing: {
        callerWaitMillis: 2000,
        executionNode: 'payments-b',
        executionP90Millis: 2400,
        executionNodeCount: 2,
        known: 2,
        lost: 11,
        clipped: 0,
        outlived: 2,
        judged: 2,
      },
    });
    const said = text('cross_store_duplicate', input);
    expect(said).toContain('First executions on payments-b ran 2.4 s at p90 (2 of 13 keys known)');
    expect(said).toContain('11 of 13 first executions were of unknown duration');
    expect(said).toContain("2 of 13 first executions outlived the caller's wait; 11 unknown.");
  });

  it('never tells a suspect whose lost execution ran on another node that its declared scope covers it', () => {
    // Keys with node stores whose visible attempt and lost execution ran on two nodes.
    const input = facts({ executionUnseen: true, storesPerKey: { min: 1, max: 2 } });
    const chosen = ids('suspected_duplicate', input);
    expect(chosen).toContain('suspects_reached_stores');
    expect(chosen).not.toContain('check_shared_store');
  });

  it('asks whether instances share their store only when the declared scope covers every place retries went', () => {
    const covered = facts({ declared: { cluster: 26 }, declaredScope: 'cluster', spread: 'cluster' });
    expect(ids('cross_store_duplicate', covered)).toContain('check_shared_store');
    expect(ids('cross_store_duplicate', covered)).not.toContain('widen_scope');
    expect(ids('cross_store_duplicate', facts())).not.toContain('check_shared_store');
  });

  it('recommends pinning, not a global namespace, when retries crossed regions', () => {
    const input = facts({ spread: 'global', spreadCounts: { cluster: 3, global: 10 } });
    expect(ids('cross_store_duplicate', input)).toContain('pin_not_global');
    expect(ids('cross_store_duplicate', input)).not.toContain('widen_scope');
    expect(text('cross_store_duplicate', input)).toContain(
      'the retries of 10 of 13 keys reached other regions',
    );
  });

  it('names the brownout behind a repeat the store had forgotten', () => {
    const input = facts({
      ttl: true,
      longestGapMillis: 2300,
      event: SPIKE,
      firstInEvent: 11,
      storesPerKey: { min: 1, max: 1 },
    });
    const chosen = ids('same_store_duplicate', input);
    expect(chosen.slice(0, 2)).toEqual(['slow_node_before_ttl', 'ttl_expired']);
    // Counted over the keys whose first execution ran there and then, not said of all of them.
    expect(text('same_store_duplicate', input)).toContain(
      'The first executions of 11 of 13 keys ran on payments-a during its latency spike',
    );
    expect(text('same_store_duplicate', { ...input, firstInEvent: 13 })).toContain(
      'The first executions of all 13 keys ran on payments-a',
    );
    expect(ids('same_store_duplicate', { ...input, event: null })).not.toContain('slow_node_before_ttl');
    expect(ids('same_store_duplicate', { ...input, firstInEvent: 0 })).not.toContain('slow_node_before_ttl');
  });

  it('says who retried: the proxy’s count, and a 502 apart from a timeout', () => {
    const input = facts({
      proxies: 2,
      retryAfter: { ...emptyRetryAfter(), timeout: 5, proxy_error: 8 },
    });
    const said = text('cross_store_duplicate', input);
    expect(said).toContain('2 of 13 keys were retried by a proxy or load balancer');
    expect(said).toContain("5 of 13 keys were retried after the caller's send timed out, at 2.0 s");
    expect(said).toContain('8 of 13 keys were retried after a proxy answered 502 or 504');
  });

  it('gives every sentence a distinct id, a condition in words and at least one class', () => {
    const seen = new Set<string>();
    for (const rule of ADVICE_SENTENCES) {
      expect(seen.has(rule.id), rule.id).toBe(false);
      seen.add(rule.id);
      expect(rule.condition.length, rule.id).toBeGreaterThan(0);
      expect(rule.classes === 'all' || rule.classes.length > 0, rule.id).toBe(true);
    }
  });
});
