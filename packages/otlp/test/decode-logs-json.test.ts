import { describe, expect, it } from 'vitest';
import { decodeLogRequestJson, decodeLogsJson } from '../src/decode-logs-json.ts';
import { OTLP_ID_LENGTH, OTLP_JSON, OTLP_TIME_RANGE, OTLP_UTF8 } from '../src/errors.ts';
import { expectCode } from './support/expect-code.ts';

const TRACE_ID = '5B8EFFF798038103D269B633813FC60C';
const SPAN_ID = 'eee19b7ec3c1b174';

/** A one-record OTLP/JSON request whose record has `fields`. */
function request(fields: object): string {
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'payments' } }] },
        scopeLogs: [{ scope: { name: 'dedup', version: '1' }, logRecords: [fields] }],
      },
    ],
  });
}

describe('decodeLogsJson (OTLP/JSON ExportLogsServiceRequest)', () => {
  it('reads ids in either case, times as strings or numbers, and severity names', () => {
    const [record] = decodeLogsJson(
      request({
        traceId: TRACE_ID,
        spanId: SPAN_ID,
        timeUnixNano: '1767225600123456000',
        observedTimeUnixNano: 1767225600000000000,
        severityNumber: 'SEVERITY_NUMBER_ERROR2',
        severityText: 'ERROR',
        body: { stringValue: 'decision' },
        eventName: 'idempotency.decision',
        attributes: [{ key: 'idempotency.key', value: { stringValue: 'k1' } }],
      }),
    );
    expect(record).toMatchObject({
      traceId: TRACE_ID.toLowerCase(),
      spanId: SPAN_ID,
      timeUnixMillis: 1767225600123.456,
      observedTimeUnixMillis: 1767225600000,
      severityNumber: 18,
      severityText: 'ERROR',
      body: 'decision',
      eventName: 'idempotency.decision',
    });
    expect(record!.attributes['idempotency.key']).toBe('k1');
    expect(record!.resource.attributes['service.name']).toBe('payments');
    expect(record!.scope).toEqual({ name: 'dedup', version: '1' });
  });

  it('accepts snake_case field names, and reads absent, empty and all-zero ids as none', () => {
    const text = JSON.stringify({
      resource_logs: [
        {
          scope_logs: [
            {
              log_records: [
                { trace_id: '', span_id: '0000000000000000', severity_number: 30, body: { int_value: 5 } },
                {},
              ],
            },
          ],
        },
      ],
    });
    const decoded = decodeLogRequestJson(text);
    expect(decoded.recordCount).toBe(2);
    expect(decoded.records[0]).toMatchObject({ traceId: '', spanId: '', severityNumber: 0, body: null });
    expect(decoded.records[1]).toMatchObject({ traceId: '', spanId: '', timeUnixMillis: 0, eventName: '' });
  });

  it('refuses malformed records with their codes', () => {
    expectCode(() => decodeLogsJson(request({ traceId: 'abc' })), OTLP_ID_LENGTH);
    expectCode(() => decodeLogsJson(request({ spanId: 'zz'.repeat(8) })), OTLP_JSON);
    expectCode(() => decodeLogsJson(request({ severityNumber: 'SEVERITY_NUMBER_LOUD' })), OTLP_JSON);
    expectCode(() => decodeLogsJson(request({ body: { stringValue: 5 } })), OTLP_JSON);
    expectCode(() => decodeLogsJson(request({ body: 'plain' })), OTLP_JSON);
    expectCode(() => decodeLogsJson(request({ timeUnixNano: '99999999999999999999' })), OTLP_TIME_RANGE);
    expectCode(() => decodeLogsJson(request({ observedTimeUnixNano: -1 })), OTLP_TIME_RANGE);
    expectCode(() => decodeLogsJson('{"resourceLogs": ['), OTLP_JSON);
    expectCode(() => decodeLogsJson(new Uint8Array([0x7b, 0xff, 0x7d])), OTLP_UTF8);
  });
});
