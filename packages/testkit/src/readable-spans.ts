import type { Span as KeyscopeSpan } from '@keyscope/otlp';
import type { Attributes, HrTime } from '@opentelemetry/api';
import { type Resource, resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/**
 * keyscope spans (from the simulator) as the SDK's ReadableSpans, so a real OpenTelemetry exporter
 * can send them: the exporter then encodes them exactly as it does for any application. One SDK
 * Resource per keyscope Resource object, because exporters group spans by resource identity.
 */
export function toReadableSpans(spans: readonly KeyscopeSpan[]): ReadableSpan[] {
  const resources = new WeakMap<object, Resource>();
  return spans.map((span) => {
    let resource = resources.get(span.resource);
    if (resource === undefined) {
      resource = resourceFromAttributes(span.resource.attributes as Attributes);
      resources.set(span.resource, resource);
    }
    const traceFlags = 1;
    return {
      name: span.name,
      // The API numbers kinds from INTERNAL = 0; OTLP from UNSPECIFIED = 0.
      kind: Math.max(0, span.kind - 1),
      spanContext: () => ({ traceId: span.traceId, spanId: span.spanId, traceFlags }),
      parentSpanContext:
        span.parentSpanId === ''
          ? undefined
          : { traceId: span.traceId, spanId: span.parentSpanId, traceFlags },
      startTime: hrTime(span.startTimeUnixMillis),
      endTime: hrTime(span.endTimeUnixMillis),
      duration: hrTime(span.endTimeUnixMillis - span.startTimeUnixMillis),
      status: { code: span.status.code, message: span.status.message || undefined },
      attributes: span.attributes as Attributes,
      links: [],
      events: span.events.map((event) => ({
        name: event.name,
        time: hrTime(event.timeUnixMillis),
        attributes: event.attributes as Attributes,
      })),
      ended: true,
      resource,
      instrumentationScope: { name: span.scope.name, version: span.scope.version },
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    } as ReadableSpan;
  });
}

function hrTime(millis: number): HrTime {
  const seconds = Math.floor(millis / 1000);
  return [seconds, Math.round((millis - seconds * 1000) * 1e6)];
}
