import { TEST_EPOCH_UNIX_MILLIS } from '@keyscope/attempts/testing';
import { client, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { RoutingFollowUp } from '../../src/routing/routing-follow-up.ts';

const SLACK_MILLIS = 2_000;

/** A send to payments reset with no answer (a mark of an unseen execution), and the retry that executed. */
function markedEvidence(key: string, at: number) {
  return [
    client({ key, at, error: 'ECONNRESET', statusCode: 0 }),
    server({ key, node: 'payments-b', at: at + 1 }),
  ];
}

/** `[start, end]` in seconds from the test's epoch, as event windows are given. */
function window(fromSecond: number, toSecond: number): [number, number] {
  return [TEST_EPOCH_UNIX_MILLIS + fromSecond * 1000, TEST_EPOCH_UNIX_MILLIS + toSecond * 1000];
}

describe('RoutingFollowUp', () => {
  it('follows a key whose evidence holds a mark of an unseen execution, and stops when it no longer does', () => {
    const followUp = new RoutingFollowUp(10, SLACK_MILLIS);
    followUp.follow('k1', markedEvidence('k1', 0));
    expect(followUp.has('k1')).toBe(true);

    followUp.follow('k1', [server({ key: 'k1', at: 0 })]);

    expect(followUp.has('k1')).toBe(false);
    expect(followUp.size).toBe(0);
  });

  it('drops the least recently judged keys past its cap and counts each drop', () => {
    const followUp = new RoutingFollowUp(2, SLACK_MILLIS);
    followUp.follow('k1', markedEvidence('k1', 0));
    followUp.follow('k2', markedEvidence('k2', 0));
    // Judged again: k1 is now the most recently judged.
    followUp.follow('k1', markedEvidence('k1', 0));

    followUp.follow('k3', markedEvidence('k3', 0));

    expect(['k1', 'k2', 'k3'].filter((key) => followUp.has(key))).toEqual(['k1', 'k3']);
    expect(followUp.size).toBe(2);
    expect(followUp.dropped).toBe(1);
  });

  it('names the keys of a service whose changed event window, widened by the slack, meets their attempts', () => {
    const followUp = new RoutingFollowUp(10, SLACK_MILLIS);
    followUp.follow('early', markedEvidence('early', 0));
    followUp.follow('late', markedEvidence('late', 100));
    const keys = new Set<string>();

    // The key's attempts run from 0 s to 1.1 s; a window from 3 s is within the 2 s slack.
    followUp.keysNear(new Map([['payments', [window(3, 10)]]]), keys);
    followUp.keysNear(new Map([['ledger', [window(100, 110)]]]), keys);

    expect([...keys]).toEqual(['early']);
  });

  it('forgets the keys whose attempts all ended before the cutoff', () => {
    const followUp = new RoutingFollowUp(10, SLACK_MILLIS);
    followUp.follow('early', markedEvidence('early', 0));
    followUp.follow('late', markedEvidence('late', 100));

    followUp.forgetBefore(TEST_EPOCH_UNIX_MILLIS + 50_000);

    expect(followUp.has('early')).toBe(false);
    expect(followUp.has('late')).toBe(true);
    expect(followUp.dropped).toBe(0);
  });
});
