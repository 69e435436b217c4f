import { JsonLogsSerializer, ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeLogRequestJson, decodeLogsJson } from '../src/decode-logs-json.ts';
import { createLogsDecoder, decodeLogRequest, decodeLogs } from '../src/decode-logs-protobuf.ts';
import { OTLP_ID_LENGTH, OTLP_NESTING, OTLP_TRUNCATED, OTLP_UTF8, OTLP_WIRE_TYPE } from '../src/errors.ts';
import type { LogRecord } from '../src/log-record.ts';
import { expectCode } from './support/expect-code.ts';
import { official } from './support/reference-decoder.ts';
import { at, PAYMENTS_RESOURCE, SPAN_ID, sdkLogRecords, TRACE_ID } from './support/sdk-log-records.ts';
import { len, tag, varint } from './support/wire.ts';

const millis = (time: [number, number]) => time[0] * 1000 + time[1] / 1e6;

const records = sdkLogRecords();
const protobuf = ProtobufLogsSerializer.serializeRequest(records)!;
const json = JsonLogsSerializer.serializeRequest(records)!;

/** A keyed selection as keyscope's pipelines pass (mappingDecodeOptions in @keyscope/attempts). */
const keyed = {
  spanAttributes: {
    keys: new Set(['idempotency.key']),
    always: new Set<string>(),
    whenKeyed: new Set(['idempotency.outcome', 'idempotency.store', 'http.route']),
  },
  resourceAttributes: new Set(['service.name', 'service.instance.id']),
};

// A hand-made ExportLogsServiceRequest: ResourceLogs(1) → ScopeLogs(2) → LogRecord(2).
const request = (...recordFields: number[][]) => new Uint8Array(len(1, len(2, len(2, ...recordFields))));
const bytesOf = (hex: string) => [...Buffer.from(hex, 'hex')];
const stringValue = (text: number[]) => len(1, text);
const utf8 = (text: string) => [...Buffer.from(text, 'utf8')];

describe('decodeLogs (protobuf ExportLogsServiceRequest)', () => {
  it('decodes every record the real SDK exports, with ids, times, severity, body and attributes', () => {
    const decoded = decodeLogs(protobuf);
    expect(decoded).toHaveLength(4);
    const [decision, outside, structured, typed] = decoded as [LogRecord, LogRecord, LogRecord, LogRecord];
    expect(decision.traceId).toBe(TRACE_ID);
    expect(decision.spanId).toBe(SPAN_ID);
    expect(decision.timeUnixMillis).toBeCloseTo(millis(at(0)), 3);
    expect(decision.observedTimeUnixMillis).toBeCloseTo(millis(at(1)), 3);
    expect(decision.severityNumber).toBe(9);
    expect(decision.severityText).toBe('INFO');
    expect(decision.body).toBe('idempotency decision: miss');
    expect(decision.eventName).toBe('idempotency.decision');
    expect({ ...decision.attributes }).toEqual({
      'idempotency.key': 'key-0001',
      'idempotency.outcome': 'miss',
      'idempotency.store': 'node-a',
      'http.route': '/payments',
    });
    expect({ ...decision.resource.attributes }).toMatchObject(PAYMENTS_RESOURCE);
    expect(decision.scope).toEqual({ name: 'payments-dedup', version: '2.0.1' });

    expect(outside.traceId).toBe('');
    expect(outside.spanId).toBe('');
    expect(outside.severityNumber).toBe(14);
    expect(structured.body).toBeNull();
    expect(typed.observedTimeUnixMillis).toBeCloseTo(millis(at(4000)), 3);
    expect({ ...typed.attributes }).toEqual({
      'idempotency.key': 'key-0002',
      text: 'żółć ✓ 日本',
      empty: '',
      integer: -42,
      double: 0.1875,
      flag: false,
      list: ['a', 'b'],
      numbers: [1, 2.5],
      map: { inner: 'value', deeper: { n: 1 } },
      bytes: new Uint8Array([0, 1, 254, 255]),
    });
    // Records of one ResourceLogs share one resource, of one ScopeLogs one scope.
    expect(new Set(decoded.map((r) => r.resource)).size).toBe(1);
    expect(new Set(decoded.map((r) => r.scope)).size).toBe(1);
  });

  it('gives the same records for the OTLP/JSON form of the same export', () => {
    const fromJson = decodeLogsJson(json);
    const plain = (list: LogRecord[]) =>
      list.map((r) => ({
        ...r,
        attributes: { ...r.attributes },
        resource: { attributes: { ...r.resource.attributes } },
      }));
    expect(plain(fromJson)).toEqual(plain(decodeLogs(protobuf)));
  });

  it('reads the bytes the official protos encode', () => {
    const bytes = new Uint8Array(
      official.ExportLogsServiceRequest.encode(
        official.ExportLogsServiceRequest.fromObject({
          resourceLogs: [
            {
              resource: { attributes: [{ key: 'service.name', value: { stringValue: 'ledger' } }] },
              scopeLogs: [
                {
                  logRecords: [
                    {
                      traceId: Buffer.from(TRACE_ID, 'hex'),
                      spanId: Buffer.from(SPAN_ID, 'hex'),
                      severityNumber: 17,
                      body: { stringValue: 'charged' },
                      attributes: [{ key: 'idempotency.key', value: { stringValue: 'k' } }],
                    },
                  ],
                },
              ],
            },
          ],
        }),
      ).finish(),
    );
    const [record] = decodeLogs(bytes);
    expect(record).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, severityNumber: 17, body: 'charged' });
    expect(record!.resource.attributes['service.name']).toBe('ledger');
  });

  it('under a keyed selection returns only records carrying a key, and counts every record', () => {
    const decoded = decodeLogRequest(protobuf, keyed);
    expect(decoded.recordCount).toBe(4);
    expect(decoded.records.map((r) => r.attributes['idempotency.key'])).toEqual([
      'key-0001',
      'key-0001',
      'key-0002',
    ]);
    expect({ ...decoded.records[0]!.attributes }).toEqual({
      'idempotency.key': 'key-0001',
      'idempotency.outcome': 'miss',
      'idempotency.store': 'node-a',
      'http.route': '/payments',
    });
    expect({ ...decoded.records[2]!.attributes }).toEqual({ 'idempotency.key': 'key-0002' });
    expect(Object.keys(decoded.records[0]!.resource.attributes).sort()).toEqual([
      'service.instance.id',
      'service.name',
    ]);
    const fromJson = decodeLogRequestJson(json, keyed);
    expect(fromJson.recordCount).toBe(4);
    expect(fromJson.records.map((r) => r.attributes['idempotency.key'])).toEqual([
      'key-0001',
      'key-0001',
      'key-0002',
    ]);
  });

  it('decodes an empty request to no records', () => {
    expect(decodeLogRequest(new Uint8Array(0))).toEqual({ records: [], recordCount: 0 });
  });

  it('reads empty and all-zero ids as no trace, as the OTLP specification asks', () => {
    const [record] = decodeLogs(request(len(9, bytesOf('00'.repeat(16))), len(10, [])));
    expect(record).toMatchObject({ traceId: '', spanId: '', timeUnixMillis: 0, observedTimeUnixMillis: 0 });
  });

  it('keeps the last of a body written twice, and no body when the last value is not a string', () => {
    const twice = decodeLogs(
      request(len(5, stringValue(utf8('first'))), len(5, stringValue(utf8('second')))),
    );
    expect(twice[0]!.body).toBe('second');
    const thenInt = decodeLogs(request(len(5, stringValue(utf8('text')), tag(3, 0), varint(7))));
    expect(thenInt[0]!.body).toBeNull();
  });

  it('refuses ids of the wrong length', () => {
    expectCode(() => decodeLogs(request(len(9, bytesOf('01'.repeat(15))))), OTLP_ID_LENGTH);
    expectCode(() => decodeLogs(request(len(10, bytesOf('01'.repeat(9))))), OTLP_ID_LENGTH);
  });

  it('refuses malformed records with their codes, and stays usable', () => {
    const decoder = createLogsDecoder();
    // A time field declared fixed64, sent as a varint.
    expectCode(() => decoder.decodeLogs(request(tag(1, 0), varint(5))), OTLP_WIRE_TYPE);
    // A body whose string runs past the record.
    expectCode(
      () => decoder.decodeLogs(new Uint8Array(len(1, len(2, len(2, [...len(5, [10, 50, 1, 2])]))))),
      OTLP_TRUNCATED,
    );
    expectCode(() => decoder.decodeLogs(request(len(5, stringValue([0xc3, 0x28])))), OTLP_UTF8);
    let nested: number[] = stringValue(utf8('x'));
    for (let i = 0; i < 40; i++) nested = len(5, len(1, nested));
    expectCode(() => decoder.decodeLogs(request(len(6, len(1, utf8('deep')), len(2, nested)))), OTLP_NESTING);
    expect(decoder.decodeLogs(protobuf)).toHaveLength(4);
  });

  it('skips a non-string body by its framing without decoding it', () => {
    // A kvlist body holding invalid UTF-8: never decoded, so never refused.
    const body = len(6, len(1, len(1, utf8('k')), len(2, stringValue([0xff]))));
    const [record] = decodeLogs(request(len(5, body)));
    expect(record!.body).toBeNull();
  });
});
