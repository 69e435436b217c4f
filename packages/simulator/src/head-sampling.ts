import type { Span } from '@keyscope/otlp';
import type { SamplingSpec } from './scenario.ts';
import { IDEMPOTENCY_KEY_HEADER } from './span-builder.ts';

/**
 * The sampling decision of every span of one unit of work (a key's flow, a GET), as the services'
 * SDKs take it (`SamplingSpec`). Decided on the whole list, before any is lost with a killed
 * process: a span's decision reaches its children through the propagated context even when the
 * span itself is never exported.
 */
export function headSample(
  spans: readonly Span[],
  sampling: SamplingSpec,
): { kept: Span[]; dropped: Span[] } {
  const byId = new Map<string, Span>();
  for (const span of spans) byId.set(`${span.traceId}/${span.spanId}`, span);
  const keyedAlways = new Set(sampling.keyedSpansAlways ?? []);
  const decided = new Map<Span, boolean>();
  const sampled = (span: Span): boolean => {
    const known = decided.get(span);
    if (known !== undefined) return known;
    const service = String(span.resource.attributes['service.name'] ?? '');
    let decision: boolean;
    if (keyedAlways.has(service) && carriesKey(span)) decision = true;
    else {
      const parent = span.parentSpanId === '' ? undefined : byId.get(`${span.traceId}/${span.parentSpanId}`);
      // A parent outside the unit (none here is) would come with its flag; none: the trace starts here.
      decision =
        parent === undefined
          ? traceIdRatioSampled(span.traceId, sampling.ratioByService[service] ?? 1)
          : sampled(parent);
    }
    decided.set(span, decision);
    return decision;
  };
  const kept: Span[] = [];
  const dropped: Span[] = [];
  for (const span of spans) (sampled(span) ? kept : dropped).push(span);
  return { kept, dropped };
}

/**
 * `TraceIdRatioBased`: sampled when the trace id's low bits, read as a fraction of their range,
 * fall below the ratio (the Go and Java SDKs read the low 63 bits; 52 of them here, which a
 * JavaScript number holds exactly). Every service decides a given trace id alike.
 */
export function traceIdRatioSampled(traceId: string, ratio: number): boolean {
  if (ratio >= 1) return true;
  if (ratio <= 0) return false;
  return Number.parseInt(traceId.slice(-13), 16) / 2 ** 52 < ratio;
}

/** The key is on the span when it starts: the gate's attribute, or the captured request header. */
function carriesKey(span: Span): boolean {
  return IDEMPOTENCY_KEY_HEADER in span.attributes || 'idempotency.key' in span.attributes;
}
