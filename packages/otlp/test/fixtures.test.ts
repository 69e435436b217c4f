import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeTracesJson } from '../src/decode-json.ts';
import { decodeTraces } from '../src/decode-protobuf.ts';
import { encodeTraces } from '../src/encode-protobuf.ts';

const fixture = (name: string) => readFileSync(new URL(`fixtures/${name}`, import.meta.url));

describe('scenario fixtures', () => {
  it('reads a payment executed twice on two nodes as the Collector file exporter writes it', () => {
    const spans = decodeTracesJson(fixture('duplicate-payment-across-nodes.json'), {
      spanAttributes: new Set(['idempotency.key', 'idempotency.outcome', 'idempotency.store']),
      resourceAttributes: new Set(['service.instance.id']),
    });
    expect(spans.map((span) => [span.resource.attributes['service.instance.id'], span.attributes])).toEqual([
      [
        'payments-node-a',
        {
          'idempotency.key': '9d4e1f0a-7c55-4a7e-b1e2-cc0ffee00001',
          'idempotency.outcome': 'miss',
          'idempotency.store': 'redis-node-a',
        },
      ],
      [
        'payments-node-b',
        {
          'idempotency.key': '9d4e1f0a-7c55-4a7e-b1e2-cc0ffee00001',
          'idempotency.outcome': 'miss',
          'idempotency.store': 'redis-node-b',
        },
      ],
    ]);
    const [first, retry] = spans;
    expect(first!.traceId).toBe('5b8efff798038103d269b633813fc60c');
    expect(retry!.traceId).toBe(first!.traceId);
    expect(first!.spanId).toBe('eee19b7ec3c1b174');
    expect(first!.kind).toBe(retry!.kind);
    expect(first!.status).toEqual({ code: 2, message: 'client went away' });
    expect(retry!.startTimeUnixMillis - first!.endTimeUnixMillis).toBe(150);
    expect(first!.events[0]!.attributes['exception.type']).toBe('DeadlineExceeded');
  });

  it('decodes the fixture to the same spans through protobuf', () => {
    const spans = decodeTracesJson(fixture('duplicate-payment-across-nodes.json'));
    expect(decodeTraces(encodeTraces(spans))).toEqual(spans);
  });
});
