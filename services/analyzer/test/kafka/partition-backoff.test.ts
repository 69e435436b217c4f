import type { Consumer, TopicPartitions } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KafkaCounters } from '../../src/kafka/kafka-counters.ts';
import { PartitionBackoff } from '../../src/kafka/partition-backoff.ts';
import { silentLogger } from '../../src/logger.ts';

function fakeConsumer() {
  const calls: string[] = [];
  const consumer = {
    pause: (partitions: TopicPartitions[]) => calls.push(`pause ${partitions[0]!.partitions!.join()}`),
    resume: (partitions: TopicPartitions[]) => calls.push(`resume ${partitions[0]!.partitions!.join()}`),
  } as unknown as Consumer;
  return { consumer, calls };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('a partition whose work fails', () => {
  it('is paused, and resumed after a backoff that doubles while it keeps failing', () => {
    vi.useFakeTimers();
    const { consumer, calls } = fakeConsumer();
    const counters = new KafkaCounters();
    const backoff = new PartitionBackoff(consumer, 'attempts', counters, silentLogger, 'detect');
    backoff.failed(2, new Error('broker unreachable'));
    expect(calls).toEqual(['pause 2']);
    expect(backoff.waiting(2)).toBe(true);
    vi.advanceTimersByTime(249);
    expect(calls).toEqual(['pause 2']);
    vi.advanceTimersByTime(1);
    expect(calls).toEqual(['pause 2', 'resume 2']);
    backoff.failed(2, new Error('still unreachable'));
    vi.advanceTimersByTime(499);
    expect(calls.at(-1)).toBe('pause 2');
    vi.advanceTimersByTime(1);
    expect(calls.at(-1)).toBe('resume 2');
    expect(counters.backoffs).toBe(2);
  });

  it('starts again from the shortest backoff once it succeeds', () => {
    vi.useFakeTimers();
    const { consumer, calls } = fakeConsumer();
    const backoff = new PartitionBackoff(consumer, 'attempts', new KafkaCounters(), silentLogger, 'detect');
    backoff.failed(1, new Error('x'));
    vi.advanceTimersByTime(250);
    backoff.failed(1, new Error('x'));
    vi.advanceTimersByTime(500);
    backoff.succeeded(1);
    backoff.failed(1, new Error('x'));
    vi.advanceTimersByTime(250);
    expect(calls.at(-1)).toBe('resume 1');
  });

  it('is not resumed by anyone while it waits, nor after the consumer stops', () => {
    vi.useFakeTimers();
    const { consumer, calls } = fakeConsumer();
    const backoff = new PartitionBackoff(consumer, 'attempts', new KafkaCounters(), silentLogger, 'detect');
    backoff.failed(0, new Error('x'));
    backoff.resume(0);
    expect(calls).toEqual(['pause 0']);
    backoff.stop();
    vi.advanceTimersByTime(60_000);
    expect(calls).toEqual(['pause 0']);
  });
});
