import type { Resource, Span, SpanEvent } from '@keyscope/otlp';
import { scenarios, simulateBatches } from '@keyscope/simulator';
import { type EncodedPayloads, encodePayloads } from './encoded-payloads.ts';
import { SPANS_PER_PAYLOAD } from './simulated-payloads.ts';

/**
 * Resource attributes an SDK export carries (12): the simulator's nodes carry 19, more than the
 * decode benchmark's workload calls for. The placement attributes keyscope reads are among them.
 */
const RESOURCE_KEYS = [
  'service.name',
  'service.version',
  'service.instance.id',
  'host.name',
  'process.pid',
  'process.runtime.version',
  'telemetry.sdk.language',
  'telemetry.sdk.version',
  'deployment.environment.name',
  'cloud.region',
  'cloud.availability_zone',
  'k8s.cluster.name',
] as const;

/**
 * The decode benchmark's workload: what one service instance's SDK exports — 512 spans per
 * payload under one resource of 12 attributes, about 10 attributes and 1–2 events per span,
 * about 20% of spans carrying an idempotency key. The spans are the simulator's (realistic names,
 * ids, attribute values and keys), regrouped by the node that emitted them; the simulator adds
 * events only to failed spans, so each span gets log-style events here.
 */
export function sdkExportPayloads(payloads: number, seed: number): EncodedPayloads {
  // Nodes emit unevenly; simulate enough spans that the busiest nodes fill the payloads asked for.
  const run = simulateBatches(scenarios.benchmark({ spans: payloads * SPANS_PER_PAYLOAD * 2 }), {
    seed,
    batchSize: SPANS_PER_PAYLOAD,
  });
  return encodePayloads(exportsOf(run.batches, payloads));
}

function* exportsOf(batches: Iterable<Span[]>, payloads: number): Generator<Span[]> {
  const pending = new Map<Resource, Span[]>();
  const trimmed = new Map<Resource, Resource>();
  let emitted = 0;
  let index = 0;
  for (const batch of batches) {
    for (const span of batch) {
      let resource = trimmed.get(span.resource);
      if (resource === undefined) {
        resource = trimResource(span.resource);
        trimmed.set(span.resource, resource);
      }
      let spans = pending.get(span.resource);
      if (spans === undefined) pending.set(span.resource, (spans = []));
      spans.push({ ...span, resource, events: withEvents(span, index++) });
      if (spans.length === SPANS_PER_PAYLOAD) {
        yield spans;
        pending.set(span.resource, []);
        if (++emitted === payloads) return;
      }
    }
  }
  throw new Error(
    `the simulation filled ${emitted} payloads of ${SPANS_PER_PAYLOAD} spans, ${payloads} asked`,
  );
}

function trimResource(resource: Resource): Resource {
  const attributes: Resource['attributes'] = {};
  for (const key of RESOURCE_KEYS) attributes[key] = resource.attributes[key] ?? '';
  return { attributes };
}

/** One event on even spans, two on odd ones (1.5 on average), after any event the span had. */
function withEvents(span: Span, index: number): SpanEvent[] {
  const events = [...span.events];
  const duration = span.endTimeUnixMillis - span.startTimeUnixMillis;
  events.push({
    name: 'log',
    timeUnixMillis: span.startTimeUnixMillis + duration / 4,
    attributes: { 'log.severity': 'INFO', 'log.message': `${span.name} accepted` },
  });
  if (index % 2 === 1) {
    events.push({
      name: 'db.query',
      timeUnixMillis: span.startTimeUnixMillis + duration / 2,
      attributes: { 'db.operation.name': 'SELECT', 'db.response.returned_rows': 1 + (index % 7) },
    });
  }
  return events;
}
