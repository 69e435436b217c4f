import type { DetectorChanges, Finding, Incident, ScopeReportState } from '@keyscope/detector';
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
 *
 * A retraction is a tombstone (null value) for the same key, which compaction eventually drops.
 * Ids are deterministic, so a detector that redoes work after a crash writes the same keys with
 * the same values: every redelivery is an idempotent upsert.
 */
export type IncidentRecord =
  | { readonly type: 'finding'; readonly id: string; readonly finding: Finding | null }
  | {
      readonly type: 'incident';
      readonly id: string;
      readonly partition: number;
      readonly incident: Incident | null;
    }
  | { readonly type: 'scope'; readonly partition: number; readonly scope: ScopeReportState | null };

const VERSION = 1;

export function recordKey(record: IncidentRecord): string {
  switch (record.type) {
    case 'finding':
      return `finding/${record.id}`;
    case 'incident':
      return `incident/${record.id}/${record.partition}`;
    case 'scope':
      return `scope/${record.partition}`;
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
  throw invalid(`unknown key ${JSON.stringify(text)}`);
}

/** The records that publish one detector call's changes, as seen from one attempts partition. */
export function recordsOfChanges(changes: DetectorChanges, partition: number): IncidentRecord[] {
  const records: IncidentRecord[] = [];
  for (const id of changes.retractedFindingIds) records.push({ type: 'finding', id, finding: null });
  for (const finding of changes.findings) records.push({ type: 'finding', id: finding.id, finding });
  for (const id of changes.retractedIncidentIds)
    records.push({ type: 'incident', id, partition, incident: null });
  for (const incident of changes.incidents)
    records.push({ type: 'incident', id: incident.id, partition, incident });
  return records;
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
