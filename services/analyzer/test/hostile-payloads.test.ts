import { defaultMapping, SPAN_REFUSALS } from '@keyscope/attempts';
import { defaultDetectorConfig } from '@keyscope/detector';
import { isKeyscopeError } from '@keyscope/errors';
import {
  type AttributeValue,
  decodeTraces,
  decodeTracesJson,
  encodeTraces,
  encodeTracesJson,
  OTLP_ERRORS,
  type Span,
  SpanKind,
} from '@keyscope/otlp';
import { at, prng, splice } from '@keyscope/otlp/testing';
import { KeyscopeStore } from '@keyscope/store';
import { span } from '@keyscope/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { DetectionPipeline } from '../src/pipeline/detection-pipeline.ts';

/**
 * Seeded fuzzing of both decoders with what an attacker sends: valid payloads mutated byte by
 * byte, and times, lengths and nesting at and past their limits. Every payload must either fail
 * with a KeyscopeError of a known code or decode to spans the pipeline takes (refusing some by a
 * known code) — never another exception — and the detector must tick promptly afterwards.
 */

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const DECODE_CODES = new Set(OTLP_ERRORS.map((definition) => definition.code));
const REFUSAL_CODES = new Set(SPAN_REFUSALS.map((definition) => definition.code));

const store = new KeyscopeStore({ path: ':memory:' });
const detectorConfig = defaultDetectorConfig();
const pipeline = new DetectionPipeline({
  mapping: defaultMapping(),
  spans: defaultServeConfig().spans,
  detectorConfig,
  store,
  logger: silentLogger,
  now: () => NOW,
});
afterAll(() => store.close());

/** Nanoseconds at the edges: unset, 1970, 2^63 ± 1, the largest fixed64, and a few near now. */
const EDGE_NANOS = [
  0n,
  1n,
  2n ** 63n - 1n,
  2n ** 63n,
  2n ** 64n - 1n,
  BigInt(NOW) * 1_000_000n,
  BigInt(NOW + 365 * 24 * 3_600_000) * 1_000_000n,
  BigInt(NOW - 30 * 24 * 3_600_000) * 1_000_000n,
];
/** The same in OTLP/JSON, with the forms that are past the range or not integers at all. */
const EDGE_JSON_TIMES: unknown[] = [
  ...EDGE_NANOS.map(String),
  '18446744073709551616',
  '99999999999999999999',
  `${'9'.repeat(400)}`,
  1e300,
  2 ** 64,
  2 ** 63,
  Number.MAX_SAFE_INTEGER,
  -1,
  1.5,
  '-1',
  '1e300',
  '',
  null,
];
const KEY_LENGTHS = [0, 1, 36, 1023, 1024, 1025, 64 * 1024];

let nextId = 1;
function keyed(
  key: string,
  node: string,
  kind: SpanKind,
  attributes: Record<string, AttributeValue> = {},
): Span {
  const id = nextId++;
  return span({
    trace: id,
    id,
    kind,
    startMillis: NOW - 60_000 + (id % 50_000),
    endMillis: NOW - 60_000 + (id % 50_000) + 15,
    attributes: { 'idempotency.key': key, 'idempotency.outcome': 'miss', ...attributes },
    resource: { attributes: { 'service.name': 'payments', 'service.instance.id': node } },
  });
}

function nested(depth: number): AttributeValue {
  let value: AttributeValue = 'leaf';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** A healthy payload: a key executed on two nodes, a client span, a server span without a key. */
function basePayload(random: () => number): Span[] {
  const key = `k-${Math.floor(random() * 1e9)}`;
  return [
    keyed(key, 'payments-a-1', SpanKind.SERVER),
    keyed(key, 'payments-a-2', SpanKind.SERVER),
    keyed(key, 'checkout-1', SpanKind.CLIENT, { 'error.type': 'timeout' }),
    { ...keyed('', 'payments-a-1', SpanKind.SERVER), attributes: {} },
  ];
}

/** The payload with one of its spans pushed to a limit. */
function atLimits(random: () => number): Span[] {
  const spans = basePayload(random);
  const target = pick(random, spans);
  const choice = Math.floor(random() * 3);
  if (choice === 0) {
    const length = pick(random, KEY_LENGTHS);
    target.attributes = { ...target.attributes, 'idempotency.key': 'k'.repeat(length) };
  } else if (choice === 1) {
    target.attributes = { ...target.attributes, deep: nested(pick(random, [31, 32, 33, 200])) };
  } else {
    target.resource = { attributes: { 'service.name': 's'.repeat(pick(random, [1024, 1025, 100_000])) } };
  }
  return spans;
}

/** `bytes` with the fixed64 of `millis` (as the encoder wrote it) replaced by `nanos`. */
function withNanos(bytes: Uint8Array, millis: number, nanos: bigint): Uint8Array {
  const find = Buffer.alloc(8);
  find.writeBigUInt64LE(BigInt(Math.round(millis * 1000)) * 1000n);
  const at = Buffer.from(bytes).indexOf(find);
  if (at < 0) return bytes;
  const out = bytes.slice();
  new DataView(out.buffer).setBigUint64(at, nanos, true);
  return out;
}

/** The byte mutations this test applies (its length prefixes claim up to 2^35 bytes). */
const BYTE_MUTATIONS: ((input: Uint8Array, random: () => number) => Uint8Array)[] = [
  (input, random) => {
    const out = input.slice();
    if (out.length > 0) out[at(random, out.length)]! ^= 1 << at(random, 8);
    return out;
  },
  (input, random) => input.slice(0, at(random, input.length)),
  (input, random) => splice(input, at(random, input.length), 1 + at(random, 8), []),
  // A length prefix claiming up to 2^35 bytes.
  (input, random) =>
    splice(
      input,
      at(random, input.length),
      1,
      pick(random, [[0x7f], [0xff, 0x7f], [0xff, 0xff, 0xff, 0xff, 0x0f], [0xff, 0xff, 0xff, 0xff, 0x7f]]),
    ),
  (input, random) => {
    const from = at(random, input.length);
    return splice(input, from, 0, input.slice(from, from + 1 + at(random, 32)));
  },
];

/** 'ok' after the pipeline took the spans, or the decoder's code; anything else fails the test. */
async function feed(decode: () => Span[], describeInput: () => string): Promise<string> {
  let spans: Span[];
  try {
    spans = decode();
  } catch (error) {
    if (isKeyscopeError(error) && DECODE_CODES.has(error.code)) return error.code;
    throw new Error(`unexpected ${String(error)} for ${describeInput()}`, { cause: error });
  }
  if (spans.length === 0) return 'ok';
  const result = await pipeline.consumeSpans(spans);
  for (const code of Object.keys(result.rejectedByReason ?? {})) {
    expect(REFUSAL_CODES.has(code), `${code} for ${describeInput()}`).toBe(true);
  }
  return result.rejectedSpans > 0 ? 'refused' : 'ok';
}

describe('hostile payloads through the decoders and the pipeline', () => {
  const seen = new Map<string, number>();
  const note = (outcome: string) => seen.set(outcome, (seen.get(outcome) ?? 0) + 1);

  it('decode mutated protobuf, or fail with a known code, and the pipeline takes what decodes', async () => {
    const random = prng(0x7175);
    for (let i = 0; i < 2_000; i++) {
      const spans = i % 3 === 0 ? atLimits(random) : basePayload(random);
      let payload = encodeTraces(spans);
      // Times at their edges, then bytes mutated on top for some.
      for (const target of spans) {
        if (random() < 0.3)
          payload = withNanos(payload, target.startTimeUnixMillis, pick(random, EDGE_NANOS));
        if (random() < 0.3) payload = withNanos(payload, target.endTimeUnixMillis, pick(random, EDGE_NANOS));
      }
      if (random() < 0.5) payload = pick(random, BYTE_MUTATIONS)(payload, random);
      const options = random() < 0.8 ? pipeline.decodeOptions : undefined;
      note(
        await feed(
          () => decodeTraces(payload, options),
          () => `protobuf iteration ${i}`,
        ),
      );
    }
    // The mutations reach the pipeline's checks, and the decoders' past the first bytes.
    expect(seen.get('ok')).toBeGreaterThan(50);
    expect(seen.get('refused')).toBeGreaterThan(500);
    for (const code of ['KS_OTLP_TRUNCATED', 'KS_OTLP_WIRE_TYPE', 'KS_OTLP_NESTING']) {
      expect(seen.get(code), code).toBeGreaterThan(0);
    }
  });

  it('decode mutated JSON, or fail with a known code, and the pipeline takes what decodes', async () => {
    const random = prng(0x150);
    const before = seen.get('KS_OTLP_TIME_RANGE') ?? 0;
    for (let i = 0; i < 1_000; i++) {
      const request = encodeTracesJson(i % 3 === 0 ? atLimits(random) : basePayload(random)) as {
        resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[];
      };
      for (const sent of request.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))) {
        if (random() < 0.3) sent.startTimeUnixNano = pick(random, EDGE_JSON_TIMES);
        if (random() < 0.3) sent.endTimeUnixNano = pick(random, EDGE_JSON_TIMES);
      }
      let text = JSON.stringify(request);
      if (random() < 0.2) {
        const position = at(random, text.length);
        text =
          text.slice(0, position) + pick(random, ['{', ']', '"', ',', '0', '\\']) + text.slice(position + 1);
      }
      const options = random() < 0.8 ? pipeline.decodeOptions : undefined;
      note(
        await feed(
          () => decodeTracesJson(text, options),
          () => `JSON iteration ${i}: ${text.slice(0, 2_000)}`,
        ),
      );
    }
    expect((seen.get('KS_OTLP_TIME_RANGE') ?? 0) - before).toBeGreaterThan(10);
  });

  it('leaves the detector nothing outside the time window, and its tick prompt', () => {
    const oldest = NOW - detectorConfig.retryHorizonMillis - 60 * 60 * 1000;
    const activity = store.recentActivity(Number.MAX_SAFE_INTEGER);
    expect(activity.length).toBeGreaterThan(0);
    for (const sample of activity) {
      expect(sample.bucketStartUnixMillis).toBeGreaterThanOrEqual(oldest - sample.bucketMillis);
      expect(sample.bucketStartUnixMillis).toBeLessThanOrEqual(NOW + 5 * 60 * 1000);
    }
    // A hang guard only, generous for a shared machine: the window bounds the tick's work.
    for (const tickAt of [NOW, NOW + 60 * 60 * 1000]) {
      const started = performance.now();
      pipeline.tick(tickAt);
      expect(performance.now() - started).toBeLessThan(2_000);
    }
    expect(store.counts().findings).toBeGreaterThan(0);
  });
});
