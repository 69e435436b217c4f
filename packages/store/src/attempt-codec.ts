import type {
  Attempt,
  ClientAttempt,
  Effect,
  Outcome,
  Placement,
  ScopeLevel,
  ServerAttempt,
} from '@keyscope/attempts';
import { CLOSE_BRACKET, COMMA, type JsonBytes, OPEN_BRACKET } from './json-bytes.ts';

/**
 * How the attempt log stores one partition key's attempts of a transaction: one JSON array, the
 * key first, then one array per attempt (an entry), every field at a fixed position.
 *
 *   segment: [key, baseStartUnixMillis, ...entries]              (SEGMENT)
 *   entry:   [traceId or 0, spanId, kind, tenant, parentSpanId,
 *             start, end, placementId, operation, ...kind's own]  (ENTRY)
 *   kind:    0 server [outcome, store, scope, result?, effect?, businessId?, outcomeFrom?]  (SERVER)
 *            1 client [resendCount, target, statusCode, error, keyFrom?]      (CLIENT)
 *            2 arrival [result?, effect?, businessId?]                        (ARRIVAL)
 *            3 effect [failed: 0 or 1]                                        (EFFECT)
 *   result:  how the request ended as one number, statusCode·8 + failed·4 + released·2 +
 *            effectSpansDeclared·1. Trailing fields at their defaults (0, '', '') are left out:
 *            most requests succeed silently, and most mappings name no business id.
 *   outcomeFrom: 1 for an outcome inferred from the HTTP response (`outcomeFrom: 'http'`); left
 *            out when the span recorded it (the fields before it are then written, defaults too).
 *   keyFrom: 1 for a send linked to its key by its server span (`keyFrom: 'child'`); left out
 *            when the send carried its key.
 *
 * A key's attempts mostly share their trace and start within a second of each other, and a batch's
 * bytes are what its commit writes (twice, counting the checkpoint): the trace id is 0 when it is
 * the previous entry's, the start is milliseconds after `baseStartUnixMillis` (the key's first
 * attempt in the segment), the end milliseconds after the start. Timestamps near each other
 * subtract exactly; one that would not read back from an offset (a start of 0 next to today's) is
 * written as `[absoluteMillis]` instead. The placement is an id (placement-table.ts). About 134
 * bytes an attempt in the bench's workload, against 181 with absolute times and every field.
 */
export const SEGMENT = { key: 0, baseStartUnixMillis: 1, firstEntry: 2 } as const;

/** Where an entry holds the fields every kind of attempt has. */
export const ENTRY = {
  traceId: 0,
  spanId: 1,
  kind: 2,
  tenant: 3,
  parentSpanId: 4,
  /** Milliseconds after the segment's base start, or `[startUnixMillis]`. */
  start: 5,
  /** Milliseconds after the start, or `[endUnixMillis]`. */
  end: 6,
  placementId: 7,
  operation: 8,
} as const;

/** Where a server attempt's own fields are, after ENTRY's. */
export const SERVER = {
  outcome: 9,
  store: 10,
  scope: 11,
  result: 12,
  effect: 13,
  businessId: 14,
  outcomeFrom: 15,
} as const;
/** Where a client attempt's own fields are, after ENTRY's. */
export const CLIENT = { resendCount: 9, target: 10, statusCode: 11, error: 12, keyFrom: 13 } as const;
/** Where an arrival's own fields are, after ENTRY's. */
export const ARRIVAL = { result: 9, effect: 10, businessId: 11 } as const;
/** Where a side effect's own field is, after ENTRY's. */
export const EFFECT = { failed: 9 } as const;

/** The kinds by code (`ENTRY.kind`). */
export const KINDS = ['server', 'client', 'arrival', 'effect'] as const;
const KIND_CODES = { server: 0, client: 1, arrival: 2, effect: 3 } as const;

/** What the codec needs of the placements table: ids both ways. */
export interface PlacementIds {
  /** The placement's id, inserting it when new. */
  idOf(placement: Placement): number;
  placement(id: number): Placement;
}

/**
 * Writes the segment of one partition key's `attempts` (see SEGMENT), fields in the order their
 * positions say; `attempts` is not empty.
 */
export function writeAttempts(out: JsonBytes, attempts: readonly Attempt[], placements: PlacementIds): void {
  const first = attempts[0]!;
  const base = first.startUnixMillis;
  out.punctuation(OPEN_BRACKET);
  out.string(first.key);
  out.nextNumber(base);
  let previousTrace = '';
  for (const a of attempts) {
    const start = a.startUnixMillis;
    out.punctuation(COMMA);
    out.punctuation(OPEN_BRACKET);
    if (a.traceId === previousTrace) out.number(0);
    else out.string(a.traceId);
    out.nextString(a.spanId);
    out.nextNumber(KIND_CODES[a.kind]);
    out.nextString(a.tenant);
    out.nextString(a.parentSpanId);
    out.punctuation(COMMA);
    writeOffset(out, base, start);
    out.punctuation(COMMA);
    writeOffset(out, start, a.endUnixMillis);
    out.nextNumber(placements.idOf(a.placement));
    out.nextString(a.operation);
    if (a.kind === 'server') {
      out.nextString(a.outcome);
      out.nextString(a.store);
      out.nextString(a.scope);
      const result = resultCode(a, a.effectSpansDeclared);
      if (a.outcomeFrom === 'http') {
        out.nextNumber(result);
        out.nextString(a.effect);
        out.nextString(a.businessId);
        out.nextNumber(1);
      } else writeResult(out, result, a.effect, a.businessId);
    } else if (a.kind === 'client') {
      out.nextNumber(a.resendCount);
      out.nextString(a.target);
      out.nextNumber(a.statusCode);
      out.nextString(a.error);
      if (a.keyFrom === 'child') out.nextNumber(1);
    } else if (a.kind === 'arrival') {
      writeResult(out, resultCode(a, false), a.effect, a.businessId);
    } else {
      out.nextNumber(a.failed ? 1 : 0);
    }
    out.punctuation(CLOSE_BRACKET);
    previousTrace = a.traceId;
  }
  out.punctuation(CLOSE_BRACKET);
}

/**
 * Appends the attempts of a segment (its JSON text, see SEGMENT) to `into`, and returns it;
 * properties in the order the extractor creates them, so a read attempt equals the appended one.
 */
export function readAttempts(json: string, placements: PlacementIds, into: Attempt[] = []): Attempt[] {
  const segment = JSON.parse(json) as unknown[];
  const key = segment[SEGMENT.key] as string;
  const base = segment[SEGMENT.baseStartUnixMillis] as number;
  let traceId = '';
  for (let i = SEGMENT.firstEntry; i < segment.length; i++) {
    const f = segment[i] as unknown[];
    if (f[ENTRY.traceId] !== 0) traceId = f[ENTRY.traceId] as string;
    const startUnixMillis = at(base, f[ENTRY.start]);
    const common = {
      key,
      tenant: f[ENTRY.tenant] as string,
      traceId,
      spanId: f[ENTRY.spanId] as string,
      parentSpanId: f[ENTRY.parentSpanId] as string,
      startUnixMillis,
      endUnixMillis: at(startUnixMillis, f[ENTRY.end]),
      placement: placements.placement(f[ENTRY.placementId] as number),
      operation: f[ENTRY.operation] as string,
    };
    const kind = KINDS[f[ENTRY.kind] as number];
    if (kind === 'server') {
      const result = readResult(f, SERVER.result, SERVER.effect, SERVER.businessId);
      const server: ServerAttempt = {
        kind,
        ...common,
        outcome: f[SERVER.outcome] as Outcome,
        store: f[SERVER.store] as string,
        scope: f[SERVER.scope] as ScopeLevel | '',
        statusCode: result.statusCode,
        failed: result.failed,
        effect: result.effect,
        released: result.released,
        businessId: result.businessId,
        effectSpansDeclared: result.declared,
      };
      if (f[SERVER.outcomeFrom] === 1) server.outcomeFrom = 'http';
      into.push(server);
    } else if (kind === 'arrival') {
      const result = readResult(f, ARRIVAL.result, ARRIVAL.effect, ARRIVAL.businessId);
      into.push({
        kind,
        ...common,
        statusCode: result.statusCode,
        failed: result.failed,
        effect: result.effect,
        released: result.released,
        businessId: result.businessId,
      });
    } else if (kind === 'effect') {
      into.push({ kind, ...common, failed: f[EFFECT.failed] === 1 });
    } else if (kind === 'client') {
      const client: ClientAttempt = {
        kind,
        ...common,
        resendCount: f[CLIENT.resendCount] as number,
        target: f[CLIENT.target] as string,
        statusCode: f[CLIENT.statusCode] as number,
        error: f[CLIENT.error] as string,
      };
      if (f[CLIENT.keyFrom] === 1) client.keyFrom = 'child';
      into.push(client);
    }
  }
  return into;
}

/** A request's end as one number (see SEGMENT); 0 for "no status, succeeded, kept, none declared". */
function resultCode(
  a: { statusCode: number; failed: boolean; released: boolean },
  declared: boolean,
): number {
  return a.statusCode * 8 + (a.failed ? 4 : 0) + (a.released ? 2 : 0) + (declared ? 1 : 0);
}

/** Writes the result, the effect and the business id, leaving out those at their defaults at the end. */
function writeResult(out: JsonBytes, result: number, effect: string, businessId: string): void {
  if (result === 0 && effect === '' && businessId === '') return;
  out.nextNumber(result);
  if (effect === '' && businessId === '') return;
  out.nextString(effect);
  if (businessId !== '') out.nextString(businessId);
}

/** The inverse of `resultCode` and `writeResult`, from the entry's fields at the positions given. */
function readResult(f: unknown[], resultAt: number, effectAt: number, businessIdAt: number) {
  const result = (f[resultAt] as number | undefined) ?? 0;
  return {
    statusCode: Math.floor(result / 8),
    failed: (result & 4) !== 0,
    effect: ((f[effectAt] as string | undefined) ?? '') as Effect | '',
    released: (result & 2) !== 0,
    declared: (result & 1) !== 0,
    businessId: (f[businessIdAt] as string | undefined) ?? '',
  };
}

/**
 * Decimal places tried for an offset, fewest first. Timestamps arrive as nanoseconds and are kept
 * as fractional milliseconds: the exact difference of two of them has a long binary expansion
 * (635.100830078125), while a rounded one (635.101) usually adds back to the same double.
 */
const OFFSET_SCALES = [1e3, 1e4, 1e6];

/** `at` as milliseconds after `origin`, the shortest offset that reads back exactly; else `[at]`. */
function writeOffset(out: JsonBytes, origin: number, at: number): void {
  const delta = at - origin;
  for (const scale of OFFSET_SCALES) {
    const rounded = Math.round(delta * scale) / scale;
    if (origin + rounded === at) {
      out.number(rounded);
      return;
    }
  }
  if (origin + delta === at) {
    out.number(delta);
    return;
  }
  out.punctuation(OPEN_BRACKET);
  out.number(at);
  out.punctuation(CLOSE_BRACKET);
}

/** The inverse of `writeOffset`. */
function at(origin: number, field: unknown): number {
  return typeof field === 'number' ? origin + field : (field as [number])[0];
}
