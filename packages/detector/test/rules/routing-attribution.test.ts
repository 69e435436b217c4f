import { TEST_EPOCH_UNIX_MILLIS } from '@keyscope/attempts/testing';
import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { defaultDetectorConfig, evaluateKey, type RoutingEvent } from '../../src/index.ts';

/** A brownout of payments node `a` from 1 s to 20 s of the test's epoch. */
const SPIKE: RoutingEvent = {
  id: 'rte_spike_a',
  type: 'latency_spike',
  service: 'payments',
  node: 'a',
  cluster: 'c1',
  region: 'eu-west-1',
  startUnixMillis: TEST_EPOCH_UNIX_MILLIS + 1000,
  endUnixMillis: TEST_EPOCH_UNIX_MILLIS + 20_000,
  ended: true,
  description: 'payments node a slowed',
};

function eventOf(attempts: ReturnType<typeof server>[]) {
  const [draft] = evaluateKey('k1', attempts, () => [SPIKE], defaultDetectorConfig());
  return draft?.routing.event?.id ?? null;
}

describe('the routing event a duplicate is blamed on', () => {
  it('is the brownout of the node where the first execution ran', () => {
    expect(
      eventOf([
        server({ key: 'k1', node: 'a', store: 'S', at: 2, durationMillis: 1500 }),
        server({ key: 'k1', node: 'b', store: 'S', at: 6 }),
      ]),
    ).toBe('rte_spike_a');
  });

  it('is none when the slowed node only answered the key in_progress, as it should, before the repeat ran there', () => {
    expect(
      eventOf([
        server({ key: 'k1', node: 'c', store: 'S', at: 2, durationMillis: 1500 }),
        server({ key: 'k1', node: 'a', store: 'S', outcome: 'in_progress', at: 4, durationMillis: 1 }),
        server({ key: 'k1', node: 'a', store: 'S', at: 6 }),
      ]),
    ).toBeNull();
  });

  it('is the brownout of a node where the key landed and got no answer before the repeat', () => {
    expect(
      eventOf([
        server({ key: 'k1', node: 'c', store: 'S', at: 2, durationMillis: 1500 }),
        server({ key: 'k1', node: 'a', store: 'S', outcome: 'error', at: 4, durationMillis: 1 }),
        server({ key: 'k1', node: 'b', store: 'S', at: 6 }),
      ]),
    ).toBe('rte_spike_a');
  });
});
