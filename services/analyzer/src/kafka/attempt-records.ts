import {
  ATTEMPT_FIELDS,
  ATTEMPT_KINDS,
  type Attempt,
  type AttemptField,
  type AttemptKind,
  attemptFromValues,
  LATENCY_BUCKETS,
  type NodeActivity,
} from '@keyscope/attempts';
import { describeValue, isPlainObject, KeyscopeError } from '@keyscope/errors';
import { KAFKA_RECORD_INVALID } from './kafka-errors.ts';

/**
 * The attempts topic: what the ingest role hands the detect role. JSON, because an operator
 * reading the topic with a console consumer should understand it, and because it is small next
 * to the OTLP it was extracted from.
 *
 * - `{"v":1,"attempt":{…}}`, keyed by `partitionKey(attempt, mapping)`: every attempt of a key
 *   lands on one partition, so one detector instance sees all of them.
 * - `{"v":1,"activity":[{"source","offset","samples":[…]}]}`, unkeyed and written to every
 *   partition: node activity is per node, not per key, and every detector needs all of it to
 *   infer failovers. `source`/`offset` name the traces-topic message it was counted from, so a
 *   detector can drop the copy an ingest instance writes again after a crash or rebalance
 *   (offsets of one source only grow); `source` is '' for OTLP requests, which are never
 *   redelivered by Kafka.
 */
export type AttemptsRecord =
  | { readonly type: 'attempt'; readonly attempt: Attempt }
  | { readonly type: 'activity'; readonly entries: readonly ActivityEntry[] };

export interface ActivityEntry {
  readonly source: string;
  readonly offset: number;
  readonly samples: readonly NodeActivity[];
}

const VERSION = 1;

export function encodeAttemptRecord(attempt: Attempt): Buffer {
  return Buffer.from(JSON.stringify({ v: VERSION, attempt }));
}

export function encodeActivityRecord(entries: readonly ActivityEntry[]): Buffer {
  return Buffer.from(JSON.stringify({ v: VERSION, activity: entries }));
}

/** Throws KS_KAFKA_RECORD_INVALID for anything keyscope did not write. */
export function decodeAttemptsRecord(value: Buffer | null): AttemptsRecord {
  if (value === null || value.length === 0) throw invalid('the record has no value');
  let body: unknown;
  try {
    body = JSON.parse(value.toString('utf8'));
  } catch {
    throw invalid(`the record is not JSON (${value.length} bytes)`);
  }
  if (!isPlainObject(body) || body.v !== VERSION) {
    throw invalid(
      `expected an object with v: ${VERSION}, received ${describeValue(isPlainObject(body) ? body.v : body)}`,
    );
  }
  if (body.attempt !== undefined) return { type: 'attempt', attempt: checkAttempt(body.attempt) };
  if (Array.isArray(body.activity)) {
    return { type: 'activity', entries: body.activity.map((entry, i) => checkEntry(entry, i)) };
  }
  throw invalid('expected an attempt or an activity list');
}

/**
 * The attempt of a record, checked field by field as the attempt table carries it, and built with
 * the table's order whatever the record's (properties it does not declare are left out). A field
 * the record lacks reads as its `absentReadsAs`: records written before the field existed.
 */
function checkAttempt(value: unknown): Attempt {
  if (!isPlainObject(value)) throw invalid('attempt must be an object');
  const kind = value.kind as AttemptKind;
  if (!ATTEMPT_KINDS.includes(kind)) {
    throw invalid(
      `attempt.kind must be server, arrival, client or effect, received ${describeValue(value.kind)}`,
    );
  }
  const fields: readonly AttemptField[] = ATTEMPT_FIELDS[kind];
  const values: unknown[] = new Array(fields.length);
  for (let i = 0; i < fields.length; i++) values[i] = checkField(fields[i]!, value[fields[i]!.name]);
  return attemptFromValues[kind](values);
}

function checkField(field: AttemptField, value: unknown): unknown {
  const at = `attempt.${field.name}`;
  if (value === undefined && field.absentReadsAs !== undefined) return field.absentReadsAs;
  switch (field.carried) {
    case 'key':
      if (typeof value !== 'string' || value === '') throw invalid(`${at} must be a string, not empty`);
      return value;
    case 'name':
    case 'text':
    case 'id':
      if (typeof value !== 'string') throw invalid(`${at} must be a string`);
      return value;
    case 'time':
    case 'number':
      if (!Number.isFinite(value)) throw invalid(`${at} must be a number`);
      return value;
    case 'flag':
      if (typeof value !== 'boolean') throw invalid(`${at} must be true or false`);
      return value;
    case 'closed':
      if (typeof value !== 'string' || !field.values.includes(value))
        throw invalid(
          `${at} must be one of ${field.values.map((v) => `'${v}'`).join(', ')}, received ${describeValue(value)}`,
        );
      return value;
    case 'optional':
      if (value !== undefined && value !== field.value)
        throw invalid(`${at} must be absent or '${field.value}', received ${describeValue(value)}`);
      return value;
    case 'placement':
      checkPlacement(value, at);
      return value;
  }
}

function checkEntry(value: unknown, index: number): ActivityEntry {
  const at = `activity[${index}]`;
  if (!isPlainObject(value) || typeof value.source !== 'string' || !Number.isSafeInteger(value.offset)) {
    throw invalid(`${at} must have a source string and an integer offset`);
  }
  if (!Array.isArray(value.samples)) throw invalid(`${at}.samples must be a list`);
  value.samples.forEach((sample, i) => {
    const where = `${at}.samples[${i}]`;
    if (!isPlainObject(sample)) throw invalid(`${where} must be an object`);
    checkPlacement(sample.placement, `${where}.placement`);
    for (const field of ['bucketStartUnixMillis', 'bucketMillis', 'spans', 'errors'] as const) {
      if (!Number.isFinite(sample[field])) throw invalid(`${where}.${field} must be a number`);
    }
    if ((sample.bucketMillis as number) <= 0) throw invalid(`${where}.bucketMillis must be positive`);
    // Absent in activity that carried no durations; else a histogram over LATENCY_BOUNDS_MILLIS.
    if (
      sample.latency !== undefined &&
      !(
        Array.isArray(sample.latency) &&
        sample.latency.length === LATENCY_BUCKETS &&
        sample.latency.every((count) => Number.isFinite(count) && count >= 0)
      )
    ) {
      throw invalid(`${where}.latency must be a list of ${LATENCY_BUCKETS} counts`);
    }
  });
  return value as unknown as ActivityEntry;
}

function checkPlacement(value: unknown, at: string): void {
  if (!isPlainObject(value)) throw invalid(`${at} must be an object`);
  for (const field of ['service', 'node', 'cluster', 'region', 'zone'] as const) {
    if (typeof value[field] !== 'string') throw invalid(`${at}.${field} must be a string`);
  }
}

function invalid(message: string): KeyscopeError {
  return new KeyscopeError(KAFKA_RECORD_INVALID, `attempts record: ${message}`);
}
