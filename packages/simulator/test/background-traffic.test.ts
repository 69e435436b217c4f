import { type Span, SpanKind, StatusCode } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_HEADER, scenarios, simulate } from '../src/index.ts';

function isBackground(span: Span): boolean {
  return (
    span.attributes[IDEMPOTENCY_KEY_HEADER] === undefined && span.attributes['idempotency.key'] === undefined
  );
}

describe('ordinary traffic', () => {
  const spike = simulate(scenarios.scopeViolation());

  it('is GET traffic of SERVER, CLIENT and INTERNAL spans with about ten attributes each', () => {
    const background = spike.spans.filter(isBackground);
    const kinds = new Set(background.map((s) => s.kind));
    expect(kinds).toEqual(new Set([SpanKind.SERVER, SpanKind.CLIENT, SpanKind.INTERNAL]));
    const gets = background.filter((s) => s.attributes['http.request.method'] === 'GET');
    expect(gets.length).toBeGreaterThan(background.length / 2);
    const http = background.filter((s) => s.attributes['http.request.method'] !== undefined);
    const mean = http.reduce((sum, s) => sum + Object.keys(s.attributes).length, 0) / http.length;
    expect(mean).toBeGreaterThanOrEqual(8);
    expect(mean).toBeLessThanOrEqual(13);
  });

  it('shows an error spike as failing SERVER spans on the spiking node', () => {
    const [event] = spike.truth.routingEvents;
    const onNode = (inside: boolean) =>
      spike.spans.filter(
        (s) =>
          isBackground(s) &&
          s.kind === SpanKind.SERVER &&
          s.resource.attributes['service.instance.id'] === event!.node &&
          (s.startTimeUnixMillis >= event!.startUnixMillis &&
            s.startTimeUnixMillis < event!.endUnixMillis) === inside,
      );
    const errorRate = (spans: Span[]) =>
      spans.filter((s) => s.status.code === StatusCode.ERROR).length / spans.length;
    expect(onNode(true).length).toBeGreaterThan(10);
    expect(errorRate(onNode(true))).toBeGreaterThan(0.5);
    expect(errorRate(onNode(false))).toBeLessThan(0.05);
  });

  it('shows a failed node as silence while its callers time out', () => {
    const { spans, truth } = simulate(scenarios.nodeFailover());
    for (const event of truth.routingEvents) {
      const node = spans.find((s) => s.resource.attributes['service.instance.id'] === event.node)!;
      const served = spans.filter(
        (s) =>
          s.kind === SpanKind.SERVER &&
          s.resource === node.resource &&
          s.startTimeUnixMillis >= event.startUnixMillis &&
          s.startTimeUnixMillis < event.endUnixMillis,
      );
      expect(served).toEqual([]);
      const before = spans.filter(
        (s) =>
          s.kind === SpanKind.SERVER &&
          s.resource === node.resource &&
          s.startTimeUnixMillis >= event.startUnixMillis - 5000 &&
          s.startTimeUnixMillis < event.startUnixMillis,
      );
      expect(before.length).toBeGreaterThan(5);
    }
    const timedOut = spans.filter((s) => isBackground(s) && s.attributes['error.type'] === 'timeout');
    expect(timedOut.length).toBeGreaterThan(0);
  });
});
