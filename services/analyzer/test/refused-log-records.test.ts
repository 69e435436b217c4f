import { createAttributes, encodeLogs, encodeLogsJson, type LogRecord } from '@keyscope/otlp';
import { decodeExportResponse } from '@keyscope/testkit/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { type RunningService, startServe } from '../src/serve.ts';

/**
 * Log records sent to the whole embedded service over real sockets are held to the spans' time
 * window and size limits (docs/configuration.md, "Spans"), refused by the same codes. The
 * service clock is fixed, so the window is the same on every run.
 */
const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const PROTOBUF = { 'content-type': 'application/x-protobuf' };
const JSON_UTF8 = { 'content-type': 'application/json' };

let service: RunningService;
let url: string;

beforeAll(async () => {
  const config = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    db: { path: ':memory:' },
    shutdown: { drainTimeoutMillis: 1_000 },
  });
  service = await startServe(config, { logger: silentLogger, now: () => NOW });
  url = `http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/logs`;
});

afterAll(async () => {
  await service?.stop();
});

const resource = {
  attributes: Object.assign(createAttributes(), {
    'service.name': 'payments',
    'service.instance.id': 'payments-a-1',
  }),
};

let next = 1;
/** A decision logged a minute before the service clock. */
function decision(key: string, fields: Partial<LogRecord> = {}): LogRecord {
  return {
    traceId: '',
    spanId: '',
    timeUnixMillis: NOW - 60_000 + next++,
    observedTimeUnixMillis: 0,
    severityNumber: 9,
    severityText: 'INFO',
    body: 'idempotency decision',
    eventName: '',
    attributes: Object.assign(createAttributes(), {
      'idempotency.key': key,
      'idempotency.outcome': 'miss',
      'idempotency.scope': 'node',
    }),
    resource,
    scope: { name: 'dedup', version: '1' },
    ...fields,
  };
}

async function post(body: Uint8Array | string, headers: Record<string, string>) {
  const response = await fetch(url, { method: 'POST', body, headers });
  return { status: response.status, body: new Uint8Array(await response.arrayBuffer()) };
}

const rejectedCounts = () => service.ingestCounts().http.logRecordsRejected;

describe('log records outside the time window or over the size limits', () => {
  it('takes the normal record and refuses one without any time beside it, through partial_success', async () => {
    const answer = await post(
      JSON.stringify(encodeLogsJson([decision('k-normal-1'), decision('k-untimed', { timeUnixMillis: 0 })])),
      JSON_UTF8,
    );
    expect(answer.status).toBe(200);
    const partial = JSON.parse(Buffer.from(answer.body).toString('utf8')).partialSuccess;
    expect(partial.rejectedLogRecords).toBe('1');
    expect(partial.errorMessage).toContain('KS_SPAN_TOO_OLD');
    expect(rejectedCounts().KS_SPAN_TOO_OLD).toBe(1);
    expect(service.store.attemptsOfKey('k-normal-1')).toHaveLength(1);
    expect(service.store.attemptsOfKey('k-untimed')).toEqual([]);
  });

  it('reads the observed time of a record without a time of its own, and refuses one in the future', async () => {
    const observed = decision('k-observed', { timeUnixMillis: 0, observedTimeUnixMillis: NOW - 30_000 });
    const future = decision('k-future', { timeUnixMillis: NOW + 3_600_000 });
    const answer = await post(encodeLogs([observed, future]), PROTOBUF);
    expect(answer.status).toBe(200);
    expect(decodeExportResponse(answer.body).partialSuccess?.rejectedSpans).toBe(1);
    expect(rejectedCounts().KS_SPAN_IN_FUTURE).toBe(1);
    expect(service.store.attemptsOfKey('k-observed')).toHaveLength(1);
    expect(service.store.attemptsOfKey('k-future')).toEqual([]);
  });

  it('refuses a record whose key is over maxKeyBytes', async () => {
    const answer = await post(encodeLogs([decision('k'.repeat(10_000))]), PROTOBUF);
    expect(answer.status).toBe(200);
    expect(decodeExportResponse(answer.body).partialSuccess?.rejectedSpans).toBe(1);
    expect(rejectedCounts().KS_SPAN_KEY_TOO_LONG).toBe(1);
  });

  it('stores a record sent twice once', async () => {
    const once = decision('k-resent');
    expect((await post(encodeLogs([once]), PROTOBUF)).status).toBe(200);
    expect((await post(encodeLogs([once]), PROTOBUF)).status).toBe(200);
    expect(service.store.attemptsOfKey('k-resent')).toHaveLength(1);
  });
});
