import {
  type Attempt,
  EFFECTS,
  type Effect,
  LATENCY_BUCKETS,
  type NodeActivity,
  OUTCOMES,
  type Outcome,
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

function checkAttempt(value: unknown): Attempt {
  if (!isPlainObject(value)) throw invalid('attempt must be an object');
  for (const field of ['key', 'tenant', 'traceId', 'spanId', 'parentSpanId', 'operation'] as const) {
    if (typeof value[field] !== 'string') throw invalid(`attempt.${field} must be a string`);
  }
  if (value.key === '') throw invalid('attempt.key must not be empty');
  for (const field of ['startUnixMillis', 'endUnixMillis'] as const) {
    if (!Number.isFinite(value[field])) throw invalid(`attempt.${field} must be a number`);
  }
  checkPlacement(value.placement, 'attempt.placement');
  switch (value.kind) {
    case 'server':
      if (!OUTCOMES.includes(value.outcome as Outcome)) throw invalid('attempt.outcome is not an outcome');
      if (typeof value.store !== 'string' || typeof value.scope !== 'string')
        throw invalid('attempt.store and attempt.scope must be strings');
      checkRequestResult(value);
      if (value.effectSpansDeclared === undefined) value.effectSpansDeclared = false;
      else if (typeof value.effectSpansDeclared !== 'boolean')
        throw invalid('attempt.effectSpansDeclared must be true or false');
      if (value.outcomeFrom !== undefined && value.outcomeFrom !== 'http')
        throw invalid(
          `attempt.outcomeFrom must be absent or 'http', received ${describeValue(value.outcomeFrom)}`,
        );
      break;
    case 'client':
      if (!Number.isFinite(value.resendCount) || !Number.isFinite(value.statusCode))
        throw invalid('attempt.resendCount and attempt.statusCode must be numbers');
      if (typeof value.target !== 'string' || typeof value.error !== 'string')
        throw invalid('attempt.target and attempt.error must be strings');
      if (value.keyFrom !== undefined && value.keyFrom !== 'child')
        throw invalid(`attempt.keyFrom must be absent or 'child', received ${describeValue(value.keyFrom)}`);
      break;
    case 'arrival':
      checkRequestResult(value);
      break;
    case 'effect':
      if (typeof value.failed !== 'boolean') throw invalid('attempt.failed must be true or false');
      break;
    default:
      throw invalid(
        `attempt.kind must be server, arrival, client or effect, received ${describeValue(value.kind)}`,
      );
  }
  return value as unknown as Attempt;
}

/**
 * How a server attempt's or arrival's request ended. Records written before attempts carried it
 * have none of the fields: they read as a request that succeeded and stated nothing (and named
 * no business id).
 */
function checkRequestResult(value: Record<string, unknown>): void {
  value.statusCode ??= 0;
  value.failed ??= false;
  value.effect ??= '';
  value.released ??= false;
  value.businessId ??= '';
  if (!Number.isFinite(value.statusCode)) throw invalid('attempt.statusCode must be a number');
  if (typeof value.businessId !== 'string') throw invalid('attempt.businessId must be a string');
  if (typeof value.failed !== 'boolean' || typeof value.released !== 'boolean')
    throw invalid('attempt.failed and attempt.released must be true or false');
  if (value.effect !== '' && !EFFECTS.includes(value.effect as Effect))
    throw invalid(
      `attempt.effect must be '', ${EFFECTS.join(', ')}, received ${describeValue(value.effect)}`,
    );
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
