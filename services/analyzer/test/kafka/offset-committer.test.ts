import type { Consumer, TopicPartitionOffsetAndMetadata } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OffsetCommitter } from '../../src/kafka/offset-committer.ts';

function fakeConsumer(options: { refuse?: () => boolean } = {}) {
  const commits: string[][] = [];
  const listeners: ((event: { payload: { memberAssignment: Record<string, number[]> } }) => void)[] = [];
  const consumer = {
    events: { GROUP_JOIN: 'consumer.group_join' },
    on: (_event: string, listener: (typeof listeners)[number]) => listeners.push(listener),
    commitOffsets: async (offsets: TopicPartitionOffsetAndMetadata[]) => {
      if (options.refuse?.()) throw new Error('rebalance in progress');
      commits.push(offsets.map((o) => `${o.topic}[${o.partition}]=${o.offset}`).sort());
    },
  } as unknown as Consumer;
  const join = (partitions: number[]) => {
    for (const listener of listeners) listener({ payload: { memberAssignment: { attempts: partitions } } });
  };
  return { consumer, commits, join };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('offset commits', () => {
  it('go out once a second with the latest mark of each partition', async () => {
    vi.useFakeTimers();
    const { consumer, commits } = fakeConsumer();
    const committer = new OffsetCommitter(consumer, 'attempts');
    committer.mark(0, 10);
    committer.mark(0, 20);
    committer.mark(3, 5);
    expect(commits).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(commits).toEqual([['attempts[0]=20', 'attempts[3]=5']]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(commits).toHaveLength(1);
    await committer.stop();
  });

  it('carry a refused commit into the next one, unless a later mark replaced it', async () => {
    let refuse = true;
    const { consumer, commits } = fakeConsumer({ refuse: () => refuse });
    const committer = new OffsetCommitter(consumer, 'attempts');
    committer.mark(1, 7);
    committer.mark(2, 9);
    await committer.commit();
    committer.mark(2, 12);
    refuse = false;
    await committer.commit();
    expect(commits).toEqual([['attempts[1]=7', 'attempts[2]=12']]);
    await committer.stop();
  });

  it('drop the marks of partitions this member lost in a rebalance', async () => {
    const { consumer, commits, join } = fakeConsumer();
    const committer = new OffsetCommitter(consumer, 'attempts');
    committer.mark(1, 7);
    committer.mark(2, 9);
    join([2, 3]);
    await committer.stop();
    expect(commits).toEqual([['attempts[2]=9']]);
  });
});
