import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeTracesJson } from '../src/decode-json.ts';
import type { DecodeOptions } from '../src/decode-options.ts';
import { decodeTraceRequest, decodeTraces } from '../src/decode-protobuf.ts';
import { encodeTraces } from '../src/encode-protobuf.ts';
import { at, mutations, outcome, prng } from './support/mutations.ts';
import { officialEncode } from './support/reference-decoder.ts';
import { sdkSpans } from './support/sdk-spans.ts';

/** Seed payloads: the SDK exporter's batch, every AnyValue kind, and a re-encoded batch. */
function seeds(): Uint8Array[] {
  const sdk = ProtobufTraceSerializer.serializeRequest(sdkSpans())!;
  const id = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));
  const anyValues = officialEncode({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'payments' } }] },
        scopeSpans: [
          {
            scope: { name: 's', version: 'v' },
            spans: [
              {
                traceId: id('0af7651916cd43dd8448eb211c80319c'),
                spanId: id('b7ad6b7169203331'),
                parentSpanId: id('b7ad6b7169203330'),
                name: 'n',
                kind: 3,
                startTimeUnixNano: 1,
                endTimeUnixNano: 2,
                status: { code: 2, message: 'm' },
                events: [
                  { name: 'e', timeUnixNano: 3, attributes: [{ key: 'x', value: { boolValue: true } }] },
                ],
                attributes: [
                  {
                    key: 'k',
                    value: {
                      kvlistValue: {
                        values: [
                          { key: 'b', value: { bytesValue: Uint8Array.from([1, 2, 3]) } },
                          {
                            key: 'a',
                            value: { arrayValue: { values: [{ intValue: -5 }, { doubleValue: 0.5 }, {}] } },
                          },
                        ],
                      },
                    },
                  },
                  { key: 'i', value: { intValue: '9223372036854775807' } },
                ],
              },
            ],
          },
        ],
      },
    ],
  });
  return [sdk, anyValues, encodeTraces(decodeTraces(sdk).slice(0, 3))];
}

const OPTIONS: (DecodeOptions | undefined)[] = [
  undefined,
  {
    spanAttributes: new Set(['idempotency.key']),
    resourceAttributes: new Set(['service.name']),
    events: false,
  },
  { maxDepth: 1 },
];

describe('decoders under mutated input', () => {
  it('either decode mutated protobuf or throw a KeyscopeError with a known code', () => {
    const random = prng(0x5eed);
    const inputs = seeds();
    const seen = new Map<string, number>();
    for (let i = 0; i < 12_000; i++) {
      const seed = inputs[i % inputs.length]!;
      let payload = seed;
      const rounds = 1 + at(random, 3);
      for (let round = 0; round < rounds; round++) {
        payload = mutations[at(random, mutations.length)]!(
          payload,
          random,
          inputs[at(random, inputs.length)]!,
        );
      }
      const options = OPTIONS[i % OPTIONS.length];
      const code = outcome(
        () => decodeTraces(payload, options),
        () => `iteration ${i}: ${Buffer.from(payload).toString('hex')}`,
      );
      seen.set(code, (seen.get(code) ?? 0) + 1);
    }
    // The mutations reach the decoder's checks, not only its first bytes.
    expect(seen.get('ok')).toBeGreaterThan(100);
    for (const code of ['KS_OTLP_TRUNCATED', 'KS_OTLP_WIRE_TYPE', 'KS_OTLP_ID_LENGTH', 'KS_OTLP_UTF8']) {
      expect(seen.get(code), code).toBeGreaterThan(0);
    }
  });

  it('fail or pass mutated protobuf alike whether spans without a key are left out or not', () => {
    const random = prng(0x4b1d);
    const inputs = seeds();
    const selection = {
      keys: new Set(['idempotency.key']),
      always: new Set(['http.response.status_code']),
      whenKeyed: new Set(['http.route']),
    };
    const every: DecodeOptions = { spanAttributes: selection, resourceAttributes: new Set(['service.name']) };
    const serverOnly: DecodeOptions = {
      ...every,
      spanAttributes: { ...selection, unkeyedKinds: new Set([2 as const]) },
    };
    let left = 0;
    for (let i = 0; i < 4_000; i++) {
      let payload = inputs[i % inputs.length]!;
      for (let round = 1 + at(random, 3); round > 0; round--) {
        payload = mutations[at(random, mutations.length)]!(
          payload,
          random,
          inputs[at(random, inputs.length)]!,
        );
      }
      const describeInput = () => `iteration ${i}: ${Buffer.from(payload).toString('hex')}`;
      const code = outcome(() => decodeTraces(payload, every), describeInput);
      expect(
        outcome(() => decodeTraces(payload, serverOnly), describeInput),
        describeInput(),
      ).toBe(code);
      if (code !== 'ok') continue;
      const all = decodeTraceRequest(payload, every);
      const some = decodeTraceRequest(payload, serverOnly);
      expect(some.spanCount).toBe(all.spanCount);
      expect(some.spans).toEqual(all.spans.filter((span) => span.traceId !== '' || span.kind === 2));
      left += all.spans.length - some.spans.length;
    }
    expect(left).toBeGreaterThan(0);
  });

  it('either decode mutated JSON or throw a KeyscopeError with a known code', () => {
    const random = prng(0x15);
    const text = new TextDecoder().decode(JsonTraceSerializer.serializeRequest(sdkSpans())!);
    const document = JSON.parse(text);
    const seen = new Map<string, number>();
    const replacements: unknown[] = [
      null,
      0,
      -1,
      1.5,
      '',
      'x',
      'NaN',
      '12',
      true,
      [],
      {},
      [{}],
      { values: [1] },
    ];
    for (let i = 0; i < 1_500; i++) {
      let input: string;
      if (i % 2 === 0) {
        // Text mutations: most break the JSON syntax.
        const position = at(random, text.length);
        const kind = at(random, 3);
        if (kind === 0) input = text.slice(0, position) + text.slice(position + 1 + at(random, 4));
        else if (kind === 1)
          input = text.slice(0, position) + '{}[]",:0a-\\'[at(random, 11)]! + text.slice(position);
        else input = text.slice(0, position);
      } else {
        // Structural mutations: valid JSON with one value of the wrong type or shape.
        const copy = structuredClone(document);
        let node: unknown = copy;
        for (let depth = 0; depth < 12; depth++) {
          if (typeof node !== 'object' || node === null) break;
          const keys = Object.keys(node);
          if (keys.length === 0) break;
          const key = keys[at(random, keys.length)]!;
          const child = (node as Record<string, unknown>)[key];
          if (random() < 0.2 || typeof child !== 'object' || child === null) {
            (node as Record<string, unknown>)[key] = replacements[at(random, replacements.length)];
            break;
          }
          node = child;
        }
        input = JSON.stringify(copy);
      }
      const code = outcome(
        () => decodeTracesJson(input, OPTIONS[i % OPTIONS.length]),
        () => `iteration ${i}: ${input}`,
      );
      seen.set(code, (seen.get(code) ?? 0) + 1);
    }
    expect(seen.get('ok')).toBeGreaterThan(10);
    expect(seen.get('KS_OTLP_JSON')).toBeGreaterThan(100);
  });
});
