import { JsonLogsSerializer, ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeLogsJson } from '../src/decode-logs-json.ts';
import { decodeLogs } from '../src/decode-logs-protobuf.ts';
import type { DecodeOptions } from '../src/decode-options.ts';
import { encodeLogs } from '../src/encode-logs.ts';
import { spansOfLogRecords } from '../src/log-record-spans.ts';
import { at, mutations, outcome, prng } from './support/mutations.ts';
import { sdkLogRecords } from './support/sdk-log-records.ts';

const OPTIONS: (DecodeOptions | undefined)[] = [
  undefined,
  {
    spanAttributes: {
      keys: new Set(['idempotency.key']),
      always: new Set<string>(),
      whenKeyed: new Set(['idempotency.outcome']),
    },
    resourceAttributes: new Set(['service.name']),
  },
  { maxDepth: 1 },
];

describe('log decoders under mutated input', () => {
  const sdk = ProtobufLogsSerializer.serializeRequest(sdkLogRecords())!;
  const inputs = [sdk, encodeLogs(decodeLogs(sdk))];

  it('either decode mutated protobuf (and read it as spans) or throw a KeyscopeError with a known code', () => {
    const random = prng(0x10c5);
    const seen = new Map<string, number>();
    for (let i = 0; i < 6_000; i++) {
      let payload = inputs[i % inputs.length]!;
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
        () => spansOfLogRecords(decodeLogs(payload, options)),
        () => `iteration ${i}: ${Buffer.from(payload).toString('hex')}`,
      );
      seen.set(code, (seen.get(code) ?? 0) + 1);
    }
    expect(seen.get('ok')).toBeGreaterThan(100);
    for (const code of ['KS_OTLP_TRUNCATED', 'KS_OTLP_WIRE_TYPE', 'KS_OTLP_ID_LENGTH']) {
      expect(seen.get(code), code).toBeGreaterThan(0);
    }
  });

  it('either decode mutated JSON or throw a KeyscopeError with a known code', () => {
    const random = prng(0x150);
    const text = new TextDecoder().decode(JsonLogsSerializer.serializeRequest(sdkLogRecords())!);
    const document = JSON.parse(text);
    const replacements: unknown[] = [null, 0, -1, 1.5, '', 'x', '12', true, [], {}, [{}], { stringValue: 1 }];
    const seen = new Map<string, number>();
    for (let i = 0; i < 1_500; i++) {
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
      const input = JSON.stringify(copy);
      const code = outcome(
        () => spansOfLogRecords(decodeLogsJson(input, OPTIONS[i % OPTIONS.length])),
        () => `iteration ${i}: ${input}`,
      );
      seen.set(code, (seen.get(code) ?? 0) + 1);
    }
    expect(seen.get('ok')).toBeGreaterThan(10);
    expect(seen.get('KS_OTLP_JSON')).toBeGreaterThan(10);
  });
});
