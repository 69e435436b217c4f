import { describe, expect, it } from 'vitest';
import { createAttributes } from '../src/attributes.ts';
import type { LogRecord } from '../src/log-record.ts';
import { loggedSpanId, logRecordSpan, spansOfLogRecords } from '../src/log-record-spans.ts';
import { type Attributes, SpanKind } from '../src/span.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';
const resource = { attributes: Object.assign(createAttributes(), { 'service.instance.id': 'node-a' }) };
const scope = { name: 'dedup', version: '1' };

function record(fields: Partial<LogRecord> & { attributes?: Attributes } = {}): LogRecord {
  return {
    traceId: '',
    spanId: '',
    timeUnixMillis: 1_767_225_600_000.5,
    observedTimeUnixMillis: 1_767_225_600_010,
    severityNumber: 9,
    severityText: 'INFO',
    body: 'idempotency decision',
    eventName: 'idempotency.decision',
    attributes: Object.assign(createAttributes(), { 'idempotency.key': 'k1', 'idempotency.outcome': 'miss' }),
    resource,
    scope,
    ...fields,
  };
}

describe('logRecordSpan', () => {
  it('reads a record as the INTERNAL span of its event, at the record time', () => {
    const r = record();
    const span = logRecordSpan(r);
    expect(span).toMatchObject({
      kind: SpanKind.INTERNAL,
      name: 'idempotency.decision',
      startTimeUnixMillis: r.timeUnixMillis,
      endTimeUnixMillis: r.timeUnixMillis,
      status: { code: 0, message: '' },
      events: [],
    });
    expect(span.attributes).toBe(r.attributes);
    expect(span.resource).toBe(resource);
    expect(span.scope).toBe(scope);
  });

  it('uses the observed time when the record has no time of its own', () => {
    const span = logRecordSpan(record({ timeUnixMillis: 0 }));
    expect(span.startTimeUnixMillis).toBe(1_767_225_600_010);
  });

  it('makes a record logged inside a span a child of that span, one id for all records logged there', () => {
    const first = logRecordSpan(record({ traceId: TRACE, spanId: SPAN }));
    const second = logRecordSpan(record({ traceId: TRACE, spanId: SPAN, body: 'again', timeUnixMillis: 5 }));
    expect(first.traceId).toBe(TRACE);
    expect(first.parentSpanId).toBe(SPAN);
    expect(first.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(first.spanId).not.toBe(SPAN);
    expect(first.spanId).toBe(loggedSpanId(TRACE, SPAN));
    expect(second.spanId).toBe(first.spanId);
    expect(logRecordSpan(record({ traceId: TRACE, spanId: 'b7ad6b7169203332' })).spanId).not.toBe(
      first.spanId,
    );
  });

  it('gives a record outside a trace ids derived from what it says', () => {
    const span = logRecordSpan(record());
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.parentSpanId).toBe('');
    // Sent again (a new object with equal content, attributes in another order): the same ids.
    const again = logRecordSpan(
      record({
        attributes: Object.assign(createAttributes(), {
          'idempotency.outcome': 'miss',
          'idempotency.key': 'k1',
        }),
        resource: { attributes: Object.assign(createAttributes(), { 'service.instance.id': 'node-a' }) },
      }),
    );
    expect([again.traceId, again.spanId]).toEqual([span.traceId, span.spanId]);
    // Anything different: other ids.
    const others = [
      record({ timeUnixMillis: 1_767_225_600_001 }),
      record({ body: 'other' }),
      record({ attributes: Object.assign(createAttributes(), { 'idempotency.key': 'k2' }) }),
      record({
        resource: { attributes: Object.assign(createAttributes(), { 'service.instance.id': 'node-b' }) },
      }),
    ].map((r) => logRecordSpan(r).spanId);
    expect(new Set([span.spanId, ...others]).size).toBe(5);
  });

  it('keeps the trace id of a record that has one but no span id', () => {
    const span = logRecordSpan(record({ traceId: TRACE }));
    expect(span.traceId).toBe(TRACE);
    expect(span.parentSpanId).toBe('');
    expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
  });

  it('reads attribute values of every type into the derived ids without failing', () => {
    const attributes = Object.assign(createAttributes(), {
      'idempotency.key': 'k1',
      big: 2n ** 70n,
      bytes: new Uint8Array([1, 2]),
      list: [1, 'a', null, [true]],
      map: Object.assign(createAttributes(), { b: 1, a: 2 }),
    });
    expect(spansOfLogRecords([record({ attributes })])[0]!.spanId).toMatch(/^[0-9a-f]{16}$/);
  });
});
