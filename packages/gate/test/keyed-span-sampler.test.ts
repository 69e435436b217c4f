import { type Context, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  ParentBasedSampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { createKeyedSpanSampler, DEFAULT_KEY_ATTRIBUTES } from '../src/keyed-span-sampler.ts';

/** The real SDK with the sampler in front of `ParentBased(AlwaysOff)`: only keyed spans (and their subtrees) are kept. */
function tracing(keyAttributes?: readonly string[]) {
  const exporter = new InMemorySpanExporter();
  const sampler = createKeyedSpanSampler({
    otherwise: new ParentBasedSampler({ root: new AlwaysOffSampler() }),
    ...(keyAttributes === undefined ? {} : { keyAttributes }),
  });
  const provider = new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('test');
  const exported = () => exporter.getFinishedSpans().map((span) => span.name);
  return { tracer, exported, sampler };
}

describe('createKeyedSpanSampler', () => {
  it('samples a span that starts with an idempotency key, under a parent that was not sampled', () => {
    const { tracer, exported } = tracing();
    const root = tracer.startSpan('checkout');
    const parent = trace.setSpan(ROOT_CONTEXT, root);
    const send = tracer.startSpan(
      'POST',
      { kind: SpanKind.CLIENT, attributes: { 'idempotency.key': 'order-1' } },
      parent,
    );
    const unkeyed = tracer.startSpan('GET', { kind: SpanKind.CLIENT }, parent);
    expect(root.isRecording()).toBe(false);
    expect(send.isRecording()).toBe(true);
    expect(unkeyed.isRecording()).toBe(false);
    for (const span of [send, unkeyed, root]) span.end();
    expect(exported()).toEqual(['POST']);
  });

  it('reads the key from captured request headers too, as a list whose first entry is the key', () => {
    const { tracer, exported } = tracing();
    tracer
      .startSpan('POST', {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.header.idempotency-key': ['order-1'] },
      })
      .end();
    tracer.startSpan('empty', { attributes: { 'http.request.header.idempotency-key': [''] } }).end();
    tracer.startSpan('blank', { attributes: { 'idempotency.key': '' } }).end();
    expect(exported()).toEqual(['POST']);
    expect(DEFAULT_KEY_ATTRIBUTES).toEqual(['idempotency.key', 'http.request.header.idempotency-key']);
  });

  it('leaves unkeyed spans to the configured sampler, whose parent-based decision keeps a keyed span’s children', () => {
    const { tracer, exported } = tracing();
    const server = tracer.startSpan('POST /payments', {
      kind: SpanKind.SERVER,
      attributes: { 'idempotency.key': 'order-1' },
    });
    const child: Context = trace.setSpan(ROOT_CONTEXT, server);
    tracer.startSpan('ledger.charge', {}, child).end();
    server.end();
    tracer.startSpan('GET /health', { kind: SpanKind.SERVER }).end();
    expect(exported()).toEqual(['ledger.charge', 'POST /payments']);
  });

  it('looks at the attributes it is told to, and only those', () => {
    const { tracer, exported } = tracing(['app.request_id']);
    tracer.startSpan('custom', { attributes: { 'app.request_id': 'r-1' } }).end();
    tracer.startSpan('default', { attributes: { 'idempotency.key': 'order-1' } }).end();
    expect(exported()).toEqual(['custom']);
  });

  it('answers with the SDK’s RECORD_AND_SAMPLED and names its delegate', () => {
    const sampler = createKeyedSpanSampler({ otherwise: new TraceIdRatioBasedSampler(0) });
    const keyed = sampler.shouldSample(
      ROOT_CONTEXT,
      '0'.repeat(31) + '1',
      'POST',
      SpanKind.CLIENT,
      { 'idempotency.key': 'k' },
      [],
    );
    const unkeyed = sampler.shouldSample(ROOT_CONTEXT, '0'.repeat(31) + '1', 'POST', SpanKind.CLIENT, {}, []);
    expect(keyed.decision).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(unkeyed.decision).toBe(SamplingDecision.NOT_RECORD);
    expect(sampler.toString()).toContain('TraceIdRatioBased{0}');
  });

  it('refuses options it does not know, a missing sampler and an empty attribute list with KS_GATE_CONFIG_INVALID', () => {
    const invalid = expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' });
    const otherwise = new AlwaysOffSampler();
    expect(() => createKeyedSpanSampler({ otherwise, ratio: 0.1 } as never)).toThrow(invalid);
    expect(() => createKeyedSpanSampler({} as never)).toThrow(invalid);
    expect(() => createKeyedSpanSampler({ otherwise, keyAttributes: [] })).toThrow(invalid);
    expect(() => createKeyedSpanSampler({ otherwise, keyAttributes: [' '] })).toThrow(invalid);
  });
});
