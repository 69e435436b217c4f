import { defaultMapping, mappingDecodeOptions } from '@keyscope/attempts';
import { encodeTraces, encodeTracesJson, OTLP_JSON, SpanKind } from '@keyscope/otlp';
import { span } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { decodeTraceMessage } from '../../src/kafka/trace-messages.ts';

describe('a message of the traces topic', () => {
  const options = mappingDecodeOptions(defaultMapping());
  const spans = [
    span({ id: 1, kind: SpanKind.CLIENT, attributes: {} }),
    span({ id: 2, kind: SpanKind.SERVER, attributes: {} }),
    span({ id: 3, kind: SpanKind.CLIENT, key: 'k1' }),
  ];

  it('decodes in either encoding to the spans the mapping reads, counting every span', () => {
    const proto = decodeTraceMessage(Buffer.from(encodeTraces(spans)), 'otlp_proto', options);
    const json = decodeTraceMessage(
      Buffer.from(JSON.stringify(encodeTracesJson(spans))),
      'otlp_json',
      options,
    );
    for (const decoded of [proto, json]) {
      expect(decoded.spanCount).toBe(3);
      expect(decoded.spans.map((s) => [s.kind, s.spanId])).toEqual([
        [SpanKind.SERVER, ''],
        [SpanKind.CLIENT, spans[2]!.spanId],
      ]);
    }
  });

  it('fails with an OTLP error code for a value that is not OTLP', () => {
    expect(() => decodeTraceMessage(Buffer.from('not json'), 'otlp_json', options)).toThrowError(
      expect.objectContaining({ code: OTLP_JSON.code }),
    );
  });
});
