import { encodeTraces, encodeTracesJson, type Span } from '@keyscope/otlp';
import { type SpanOptions, span } from '@keyscope/testkit';
import { decodeExportResponse } from '@keyscope/testkit/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { type RunningService, startServe } from '../src/serve.ts';

/**
 * Hostile spans sent to the whole embedded service over real sockets: the receivers, the
 * pipeline's time window and size limits, and SQLite. The service clock is fixed, so the window
 * is the same on every run.
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
  url = `http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/traces`;
});

afterAll(async () => {
  await service?.stop();
});

let nextId = 1;
/** A keyed SERVER span a minute before the service clock, as a healthy pipeline sends it. */
function execution(key: string, node = 'payments-a-1', overrides: SpanOptions = {}): Span {
  const id = nextId++;
  return span({
    trace: id,
    id,
    startMillis: NOW - 60_000 + id,
    endMillis: NOW - 60_000 + id + 20,
    attributes: { 'idempotency.key': key, 'idempotency.outcome': 'miss', 'idempotency.scope': 'node' },
    resource: { attributes: { 'service.name': 'payments', 'service.instance.id': node } },
    ...overrides,
  });
}

async function post(body: Uint8Array | string, headers: Record<string, string>) {
  const response = await fetch(url, { method: 'POST', body, headers });
  return { status: response.status, body: new Uint8Array(await response.arrayBuffer()) };
}

/** `bytes` with the 8 little-endian bytes of `marker` microseconds × 1000 replaced by `nanos`. */
function withNanos(bytes: Uint8Array, markerMillis: number, nanos: bigint): Uint8Array {
  const find = new Uint8Array(8);
  new DataView(find.buffer).setBigUint64(0, BigInt(Math.round(markerMillis * 1000)) * 1000n, true);
  const at = Buffer.from(bytes).indexOf(Buffer.from(find));
  expect(at).toBeGreaterThan(0);
  const out = bytes.slice();
  new DataView(out.buffer).setBigUint64(at, nanos, true);
  return out;
}

const rejectedCounts = () => service.ingestCounts().http.spansRejected;

describe('spans outside the time window', () => {
  it('takes the normal span and refuses one starting at 0 beside it, by code, through partial_success', async () => {
    const before = service.store.counts().attempts;
    const zero = execution('k-zero', 'payments-a-2', { startMillis: 0 });
    const answer = await post(encodeTraces([execution('k-normal-1'), zero]), PROTOBUF);
    expect(answer.status).toBe(200);
    const partial = decodeExportResponse(answer.body).partialSuccess;
    expect(partial?.rejectedSpans).toBe(1);
    expect(partial?.errorMessage).toContain('KS_SPAN_TOO_OLD');
    expect(partial?.errorMessage).toContain(zero.spanId);
    expect(rejectedCounts().KS_SPAN_TOO_OLD).toBe(1);
    expect(service.store.counts().attempts).toBe(before + 1);
    expect(service.store.attemptsOfKey('k-normal-1')).toHaveLength(1);
    expect(service.store.attemptsOfKey('k-zero')).toEqual([]);
  });

  it('refuses a span starting at 2^64 - 1 ns (protobuf fixed64) and a SERVER span without a key ending there', async () => {
    const far = execution('k-far');
    const unkeyed = execution('', 'payments-a-3', { attributes: {} });
    let body = encodeTraces([execution('k-normal-2'), far, unkeyed]);
    body = withNanos(body, far.startTimeUnixMillis, 2n ** 64n - 1n);
    body = withNanos(body, unkeyed.endTimeUnixMillis, 2n ** 64n - 1n);
    const answer = await post(body, PROTOBUF);
    expect(answer.status).toBe(200);
    const partial = decodeExportResponse(answer.body).partialSuccess;
    expect(partial?.rejectedSpans).toBe(2);
    expect(partial?.errorMessage).toContain('KS_SPAN_IN_FUTURE ×2');
    expect(rejectedCounts().KS_SPAN_IN_FUTURE).toBe(2);
    expect(service.store.attemptsOfKey('k-normal-2')).toHaveLength(1);
    expect(service.store.attemptsOfKey('k-far')).toEqual([]);
    // The detector still ticks promptly: no activity reached it from the year 586 000.
    const started = performance.now();
    service.pipeline.tick(NOW);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('refuses a span that ends before it starts', async () => {
    const backwards = execution('k-backwards', 'payments-a-1', { endMillis: NOW - 120_000 });
    const answer = await post(encodeTraces([execution('k-normal-3'), backwards]), PROTOBUF);
    expect(decodeExportResponse(answer.body).partialSuccess?.rejectedSpans).toBe(1);
    expect(rejectedCounts().KS_SPAN_ENDS_BEFORE_START).toBe(1);
  });

  it.each([
    ['the decimal string 99999999999999999999', '99999999999999999999'],
    ['the JSON number 1e300', 1e300],
  ])('refuses a payload whose JSON time is %s with 400 and KS_OTLP_TIME_RANGE', async (_name, time) => {
    const normal = execution(`k-json-normal-${time}`);
    const bad = execution(`k-json-bad-${time}`);
    const request = encodeTracesJson([normal, bad]) as {
      resourceSpans: { scopeSpans: { spans: { spanId: string; startTimeUnixNano: unknown }[] }[] }[];
    };
    const sent = request.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
    sent.find((s) => s.spanId === bad.spanId)!.startTimeUnixNano = time;
    const body = JSON.stringify(request);
    const answer = await post(body, JSON_UTF8);
    expect(answer.status).toBe(400);
    expect(JSON.parse(Buffer.from(answer.body).toString('utf8')).message).toContain('startTimeUnixNano');
    expect(service.ingestCounts().http.payloadsRejected.KS_OTLP_TIME_RANGE).toBeGreaterThan(0);
    expect(service.store.attemptsOfKey(bad.attributes['idempotency.key'] as string)).toEqual([]);
    // As for any decode error, the sender drops the payload; the same span alone is taken.
    const again = await post(JSON.stringify(encodeTracesJson([normal])), JSON_UTF8);
    expect(again.status).toBe(200);
    expect(service.store.attemptsOfKey(`k-json-normal-${time}`)).toHaveLength(1);
  });
});

describe('spans over the size limits', () => {
  it('refuses spans with a 10 MB key through partial_success and never stores the key', async () => {
    const key = `k-${'x'.repeat(10 * 1024 * 1024)}`;
    const before = service.store.counts();
    // Executed on two nodes, one request each: accepted, it would be a finding quoting the key.
    for (const [node, normal] of [
      ['payments-a-1', 'k-normal-4'],
      ['payments-a-2', 'k-normal-5'],
    ] as const) {
      const answer = await post(encodeTraces([execution(key, node), execution(normal)]), PROTOBUF);
      expect(answer.status).toBe(200);
      const partial = decodeExportResponse(answer.body).partialSuccess;
      expect(partial?.rejectedSpans).toBe(1);
      expect(partial?.errorMessage).toContain('KS_SPAN_KEY_TOO_LONG');
      // The message quotes the key's start only.
      expect(partial!.errorMessage!.length).toBeLessThan(1_000);
    }
    expect(rejectedCounts().KS_SPAN_KEY_TOO_LONG).toBe(2);
    const after = service.store.counts();
    expect(after.attempts).toBe(before.attempts + 2);
    expect(after.findings).toBe(before.findings);
    expect(service.store.attemptsOfKey(key)).toEqual([]);
  });

  it('refuses a span whose service name is over maxNameBytes', async () => {
    const long = execution('k-long-service', 'payments-a-1', {
      resource: { attributes: { 'service.name': 's'.repeat(2_000) } },
    });
    const answer = await post(encodeTraces([long, execution('k-normal-6')]), PROTOBUF);
    expect(decodeExportResponse(answer.body).partialSuccess?.rejectedSpans).toBe(1);
    expect(rejectedCounts().KS_SPAN_NAME_TOO_LONG).toBe(1);
    expect(service.store.attemptsOfKey('k-long-service')).toEqual([]);
  });

  it('answers an empty ExportTraceServiceResponse when nothing was refused', async () => {
    const answer = await post(encodeTraces([execution('k-normal-7')]), PROTOBUF);
    expect(answer.status).toBe(200);
    expect(decodeExportResponse(answer.body).partialSuccess).toBeUndefined();
  });
});
