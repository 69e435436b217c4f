import {
  type DetectorChanges,
  type Finding,
  type Incident,
  ROUTING_EVENT_TYPES,
  type RoutingEvent,
  type ScopeReportState,
} from '@keyscope/detector';
import { KeyscopeError } from '@keyscope/errors';
import { KAFKA_RECORD_INVALID } from './kafka-errors.ts';

/**
 * The incidents topic (compacted): the detect role's findings and incidents, which the serve role
 * materializes. Each attempts partition has its own detector and so its own view of an incident
 * (the keys of that incident that hash to it), so an incident is stored as one record per
 * contributing partition and the serve role adds them up:
 *
 * | key                                   | value (JSON, `v: 1`)         |
 * | ------------------------------------- | ---------------------------- |
 * | `incident/<incident id>/<partition>`  | `{ incident }` — that part   |
 * | `finding/<finding id>`                | `{ finding }`                |
 * | `scope/<partition>`                   | `{ scope }` — report counts  |
 * | `parts/<partition>`                   | `{ incidentIds, sinceUnixMillis }` — see below |
 * | `routing-event/<event id>`            | `{ routingEvent }`           |
 *
 * A retraction is a tombstone (null value) for the same key, which compaction eventually drops.
 * Ids are deterministic, so a detector that redoes work after a crash writes the same keys with
 * the same values: every redelivery is an idempotent upsert.
 *
 * Every record of one attempts partition goes to the same incidents partition (the attempts
 * partition modulo the incidents topic's partition count), so the serve role reads them in the
 * order they were written. That order is what makes `parts/<partition>` safe: a detector that
 * takes a partition over (rebuilt from the attempts topic, or resumed from its file) republishes
 * its incident parts once it has caught up, followed by the ids of every incident it holds a part
 * of. The previous owner may have published parts the new state does not hold (a key attributed
 * before the routing event that explains it was known, and the owner killed before it moved the
 * key); nobody would ever retract them, so the serve role drops every part of that partition not
 * in the list. Only parts of incidents opened since `sinceUnixMillis` are judged: a state rebuilt
 * from the attempts topic knows one retry horizon, and older incidents stay as they were.
 *
 * Routing events are inferred from node activity alone, and every attempts partition holds all of
 * it, so every partition's detector infers the same events under the same derived ids (type,
 * service, node or place, start). Their records are keyed by the event id only: the serve role
 * keeps one row per id, whichever partition wrote it last. A partition behind the others may
 * write an earlier version of an event (a window not ended yet) after they wrote its last one;
 * reading on, it reaches the same activity and writes the last version too.
 */
export type IncidentRecord =
  | { readonly type: 'finding'; readonly id: string; readonly finding: Finding | null }
  | {
      readonly type: 'incident';
      readonly id: string;
      readonly partition: number;
      readonly incident: Incident | null;
    }
  | { readonly type: 'scope'; readonly partition: number; readonly scope: ScopeReportState | null }
  | {
      readonly type: 'parts';
      readonly partition: number;
      readonly incidentIds: readonly string[];
      /** Parts of incidents opened before this are beyond the new owner's window and kept. */
      readonly sinceUnixMillis: number;
    }
  | { readonly type: 'routing-event'; readonly id: string; readonly routingEvent: RoutingEvent | null };

const VERSION = 1;

export function recordKey(record: IncidentRecord): string {
  switch (record.type) {
    case 'finding':
      return `finding/${record.id}`;
    case 'incident':
      return `incident/${record.id}/${record.partition}`;
    case 'scope':
      return `scope/${record.partition}`;
    case 'parts':
      return `parts/${record.partition}`;
    case 'routing-event':
      return `routing-event/${record.id}`;
  }
}

/**
 * Below the brokers' default 1 MiB record limit, which a finding of a hot key (every attempt of it
 * within the retry horizon) could pass: a record the broker refuses would stop its partition.
 */
export const MAX_RECORD_BYTES = 900 * 1024;

export function encodeIncidentRecord(record: IncidentRecord): { key: string; value: Buffer | null } {
  const key = recordKey(record);
  switch (record.type) {
    case 'finding': {
      if (record.finding === null) return { key, value: null };
      let finding = record.finding;
      let value = json({ v: VERSION, finding })!;
      // Keep the first and the last attempts, halving until it fits: the executions that make the
      // finding are among them, and the serve role still counts `executions` from the finding.
      const attempts = record.finding.attempts;
      for (let half = Math.floor(attempts.length / 2); value.length > MAX_RECORD_BYTES && half > 1; ) {
        half = Math.floor(half / 2);
        finding = { ...record.finding, attempts: [...attempts.slice(0, half), ...attempts.slice(-half)] };
        value = json({ v: VERSION, finding })!;
      }
      return { key, value };
    }
    case 'incident':
      return {
        key,
        value: json(record.incident === null ? null : { v: VERSION, incident: record.incident }),
      };
    case 'scope':
      return { key, value: json(record.scope === null ? null : { v: VERSION, scope: record.scope }) };
    case 'parts':
      return {
        key,
        value: json({ v: VERSION, incidentIds: record.incidentIds, sinceUnixMillis: record.sinceUnixMillis }),
      };
    case 'routing-event':
      return {
        key,
        value: json(record.routingEvent === null ? null : { v: VERSION, routingEvent: record.routingEvent }),
      };
  }
}

/** Throws KS_KAFKA_RECORD_INVALID for a key or value keyscope did not write. */
export function decodeIncidentRecord(key: Buffer | null, value: Buffer | null): IncidentRecord {
  const text = key?.toString('utf8') ?? '';
  const parts = text.split('/');
  const body = value === null ? null : parse(value);
  const field = (name: string) => {
    if (body === null) return null;
    const content = body[name];
    if (typeof content !== 'object' || content === null) throw invalid(`${text}: expected a ${name} object`);
    return content;
  };
  if (parts[0] === 'finding' && parts.length === 2 && parts[1] !== '') {
    const finding = field('finding') as Finding | null;
    if (finding !== null && (finding.id !== parts[1] || !Array.isArray(finding.attempts)))
      throw invalid(`${text}: the finding's id or attempts do not match its key`);
    return { type: 'finding', id: parts[1]!, finding };
  }
  if (parts[0] === 'incident' && parts.length === 3 && parts[1] !== '' && isPartition(parts[2]!)) {
    const incident = field('incident') as Incident | null;
    if (incident !== null && incident.id !== parts[1])
      throw invalid(`${text}: the incident id does not match`);
    return { type: 'incident', id: parts[1]!, partition: Number(parts[2]), incident };
  }
  if (parts[0] === 'scope' && parts.length === 2 && isPartition(parts[1]!)) {
    const scope = body === null ? null : body.scope;
    if (scope !== null && !Array.isArray(scope)) throw invalid(`${text}: expected a scope list`);
    return { type: 'scope', partition: Number(parts[1]), scope: scope as ScopeReportState | null };
  }
  if (parts[0] === 'parts' && parts.length === 2 && isPartition(parts[1]!)) {
    const incidentIds = body?.incidentIds;
    const sinceUnixMillis = body?.sinceUnixMillis;
    if (!Array.isArray(incidentIds) || !incidentIds.every((id) => typeof id === 'string'))
      throw invalid(`${text}: expected a list of incident ids`);
    if (typeof sinceUnixMillis !== 'number' || !Number.isFinite(sinceUnixMillis))
      throw invalid(`${text}: expected sinceUnixMillis`);
    return { type: 'parts', partition: Number(parts[1]), incidentIds, sinceUnixMillis };
  }
  if (parts[0] === 'routing-event' && parts.length === 2 && parts[1] !== '') {
    const routingEvent = field('routingEvent') as RoutingEvent | null;
    if (routingEvent !== null && !isRoutingEvent(routingEvent, parts[1]!))
      throw invalid(`${text}: expected a routing event with this id, a known type, a service and its window`);
    return { type: 'routing-event', id: parts[1]!, routingEvent };
  }
  throw invalid(`unknown key ${JSON.stringify(text)}`);
}

/**
 * The records a detector that took over `partition` publishes once caught up: each incident it
 * holds a part of, then the list of their ids (any other part of the partition is stale).
 */
export function recordsOfTakeover(
  incidents: readonly Incident[],
  partition: number,
  sinceUnixMillis: number,
): IncidentRecord[] {
  return [
    ...incidents.map(
      (incident): IncidentRecord => ({ type: 'incident', id: incident.id, partition, incident }),
    ),
    { type: 'parts', partition, incidentIds: incidents.map((incident) => incident.id), sinceUnixMillis },
  ];
}

/** The records that publish one detector call's changes, as seen from one attempts partition. */
export function recordsOfChanges(changes: DetectorChanges, partition: number): IncidentRecord[] {
  const records: IncidentRecord[] = [];
  for (const id of changes.retractedRoutingEventIds ?? [])
    records.push({ type: 'routing-event', id, routingEvent: null });
  for (const routingEvent of changes.routingEvents ?? [])
    records.push({ type: 'routing-event', id: routingEvent.id, routingEvent });
  for (const id of changes.retractedFindingIds) records.push({ type: 'finding', id, finding: null });
  for (const finding of changes.findings) records.push({ type: 'finding', id: finding.id, finding });
  for (const id of changes.retractedIncidentIds)
    records.push({ type: 'incident', id, partition, incident: null });
  for (const incident of changes.incidents)
    records.push({ type: 'incident', id: incident.id, partition, incident });
  return records;
}

/** What the store and the API read of an event: the rest of its body is carried as written. */
function isRoutingEvent(event: RoutingEvent, id: string): boolean {
  return (
    event.id === id &&
    ROUTING_EVENT_TYPES.includes(event.type) &&
    typeof event.service === 'string' &&
    Number.isFinite(event.startUnixMillis) &&
    Number.isFinite(event.endUnixMillis) &&
    typeof event.ended === 'boolean'
  );
}

function isPartition(text: string): boolean {
  return /^\d{1,9}$/.test(text);
}

function json(value: unknown): Buffer | null {
  return value === null ? null : Buffer.from(JSON.stringify(value));
}

function parse(value: Buffer): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(value.toString('utf8'));
  } catch {
    throw invalid(`the record is not JSON (${value.length} bytes)`);
  }
  if (typeof body !== 'object' || body === null || (body as { v?: unknown }).v !== VERSION) {
    throw invalid(`expected an object with v: ${VERSION}`);
  }
  return body as Record<string, unknown>;
}

function invalid(message: string): KeyscopeError {
  return new KeyscopeError(KAFKA_RECORD_INVALID, `incidents record: ${message}`);
}
