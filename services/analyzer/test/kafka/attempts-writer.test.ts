import { defaultMapping, EARLIEST_SPAN_UNIX_MILLIS, type Mapping, type SpanLimits } from '@keyscope/attempts';
import { scenarios, simulate } from '@keyscope/simulator';
import { activity, clientSpan, server, serverSpan, span } from '@keyscope/testkit';
import type { Message, Producer, ProducerRecord } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { decodeAttemptsRecord } from '../../src/kafka/attempt-records.ts';
import { AttemptsWriter } from '../../src/kafka/attempts-writer.ts';
import { createKafkaMetrics, KafkaCounters } from '../../src/kafka/kafka-counters.ts';

/** A producer that records what it is asked to send, or refuses everything. */
function fakeProducer(refuse = false) {
  const sent: ProducerRecord[] = [];
  const producer = {
    send: async (record: ProducerRecord) => {
      if (refuse) throw new Error('broker unreachable');
      sent.push(record);
      return [];
    },
  } as unknown as Producer;
  return { producer, messages: () => sent.flatMap((record) => record.messages as Message[]) };
}

/** Every span from 2000 to the far future is in the window, as in a test of old simulated traffic. */
const OPEN_WINDOW: SpanLimits = {
  notBeforeUnixMillis: EARLIEST_SPAN_UNIX_MILLIS,
  notAfterUnixMillis: Date.UTC(2100, 0, 1),
  maxKeyBytes: 1024,
  maxNameBytes: 1024,
  maxValueBytes: 4096,
};

function writer(producer: Producer, mapping: Mapping = defaultMapping(), limits = OPEN_WINDOW) {
  return new AttemptsWriter({
    producer,
    topic: 'attempts',
    partitions: 3,
    mapping,
    counters: new KafkaCounters(),
    limits: () => limits,
  });
}

describe('the ingest role writing attempts', () => {
  it('writes node activity to every partition, ahead of the attempts, which are keyed by idempotency key', async () => {
    const fake = fakeProducer();
    const attempts = [server({ key: 'k1' }), server({ key: 'k2' })];
    const entries = [
      { source: 'otlp_spans/0', offset: 5, samples: activity({ fromSecond: 0, toSecond: 1 }) },
    ];
    await writer(fake.producer).write(attempts, entries);
    const messages = fake.messages();
    expect(messages.slice(0, 3).map((message) => message.partition)).toEqual([0, 1, 2]);
    expect(decodeAttemptsRecord(messages[0]!.value as Buffer)).toEqual({ type: 'activity', entries });
    expect(messages.slice(3).map((message) => message.key)).toEqual(['k1', 'k2']);
    expect(messages.slice(3).every((message) => message.partition === undefined)).toBe(true);
  });

  it('splits the activity of a large batch into records well below the broker limit', async () => {
    const fake = fakeProducer();
    const entries = Array.from({ length: 3_000 }, (_, i) => ({
      source: 'otlp_spans/0',
      offset: i,
      samples: activity({ node: `node-${i % 7}`, fromSecond: 0, toSecond: 2 }),
    }));
    await writer(fake.producer).write([], entries);
    const values = fake
      .messages()
      .filter((message) => message.partition === 0)
      .map((m) => m.value as Buffer);
    expect(values.length).toBeGreaterThan(1);
    for (const value of values) expect(value.length).toBeLessThan(512 * 1024);
    const decoded = values.flatMap((value) => {
      const record = decodeAttemptsRecord(value);
      return record.type === 'activity' ? record.entries : [];
    });
    expect(decoded).toEqual(entries);
  });

  it('qualifies keys by tenant when the mapping says keys are per tenant', async () => {
    const fake = fakeProducer();
    const mapping = { ...defaultMapping(), keyNamespace: 'tenant' as const };
    await writer(fake.producer, mapping).write([server({ key: 'k1', tenant: 'acme' })], []);
    expect(fake.messages().map((message) => message.key)).toEqual(['k1\u0000acme']);
  });

  it('writes nothing for a batch without attempts or activity', async () => {
    const fake = fakeProducer();
    await writer(fake.producer).write([], [{ source: '', offset: 0, samples: [] }]);
    expect(fake.messages()).toEqual([]);
  });

  it('takes OTLP spans once Kafka has them, and refuses them with a retryable KS_KAFKA_UNAVAILABLE otherwise', async () => {
    const { spans } = simulate(scenarios.nodeFailover({ requests: 20 }), { seed: 1 });
    const fake = fakeProducer();
    await expect(writer(fake.producer).consumeSpans(spans)).resolves.toMatchObject({ rejectedSpans: 0 });
    expect(fake.messages().length).toBeGreaterThan(3);
    await expect(writer(fakeProducer(true).producer).consumeSpans(spans)).rejects.toMatchObject({
      code: 'KS_KAFKA_UNAVAILABLE',
      retryable: true,
    });
  });

  it('refuses spans outside the time window or over the key limit one by one, and writes only the rest', async () => {
    const fake = fakeProducer();
    const result = await writer(fake.producer).consumeSpans([
      span({ id: 1, attributes: { 'idempotency.key': 'k-good', 'idempotency.outcome': 'miss' } }),
      span({
        id: 2,
        startMillis: 0,
        endMillis: 1,
        attributes: { 'idempotency.key': 'k-zero' },
      }),
      span({ id: 3, attributes: { 'idempotency.key': 'k'.repeat(2_000) } }),
    ]);
    expect(result.rejectedSpans).toBe(2);
    expect(result.rejectedByReason).toEqual({ KS_SPAN_TOO_OLD: 1, KS_SPAN_KEY_TOO_LONG: 1 });
    expect(
      fake
        .messages()
        .filter((message) => message.key !== undefined)
        .map((message) => message.key),
    ).toEqual(['k-good']);
  });

  it('writes a keyless send that timed out as a client attempt of the key its server span carries, across requests', async () => {
    const fake = fakeProducer();
    const counters = new KafkaCounters();
    const ingest = new AttemptsWriter({
      producer: fake.producer,
      topic: 'attempts',
      partitions: 3,
      mapping: defaultMapping(),
      counters,
      limits: () => OPEN_WINDOW,
    });
    const send = clientSpan({
      id: 0xc1,
      error: true,
      durationMillis: 2000,
      attributes: { 'server.address': 'payments', 'error.type': 'timeout' },
    });
    await ingest.consumeSpans([send]);
    expect(fake.messages().filter((message) => message.key !== undefined)).toEqual([]);
    await ingest.consumeSpans([serverSpan({ key: 'k1', parentSpanId: send.spanId, statusCode: 201 })]);
    const attempts = fake.messages().flatMap((message) => {
      const record = decodeAttemptsRecord(message.value as Buffer);
      return record.type === 'attempt' ? [[message.key, record.attempt]] : [];
    });
    expect(attempts).toMatchObject([
      ['k1', { kind: 'arrival', key: 'k1' }],
      ['k1', { kind: 'client', key: 'k1', spanId: send.spanId, error: 'timeout', keyFrom: 'child' }],
    ]);
    expect(counters.sendLinks).toEqual({ linked: 1, evicted: 0, expired: 0 });
    expect(await createKafkaMetrics(counters).render()).toContain(
      'keyscope_kafka_send_links_total{result="linked"} 1',
    );
  });
});
