import {
  ATTEMPT_FIELDS,
  type Attempt,
  type AttemptField,
  type AttemptKind,
  attemptLiteral,
  compileFunction,
  literal,
  type Placement,
} from '@keyscope/attempts';
import { CLOSE_BRACKET, COMMA, type JsonBytes, OPEN_BRACKET } from './json-bytes.ts';

/**
 * How the attempt log stores one partition key's attempts of a transaction: one JSON array, the
 * key first, then one array per attempt (an entry), every field at a fixed position.
 *
 *   segment: [key, baseStartUnixMillis, ...entries]              (SEGMENT)
 *   entry:   [traceId or 0, spanId, kind, tenant, parentSpanId,
 *             start, end, placementId, operation, ...kind's own]  (ENTRY)
 *   kind:    0 server [outcome, store, scope, result?, effect?, businessId?]  (SERVER)
 *            1 client [resendCount, target, statusCode, error, keyFrom?]      (CLIENT)
 *            2 arrival [result?, effect?, businessId?]                        (ARRIVAL)
 *            3 effect [failed: 0 or 1]                                        (EFFECT)
 *   result:  how the request ended as one number, statusCode·8 + failed·4 + released·2 +
 *            effectSpansDeclared·1. Trailing fields at their defaults (0, '', '') are left out:
 *            most requests succeed silently, and most mappings name no business id.
 *   keyFrom: 1 for a send linked to its key by its server span (`keyFrom: 'child'`); left out
 *            when the send carried its key.
 *   then:    the kind's fields in the attempt table (`ATTEMPT_FIELDS`) that this layout does not
 *            name, in the table's order: texts as strings, numbers and times as numbers, flags
 *            and optional fields as 1 or 0, placements as ids. Trailing ones at what they read as
 *            when absent (the field's `absentReadsAs`, so that segments written before the field
 *            existed read alike) are left out.
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

/**
 * Each kind's own slots after ENTRY's, in this layout: a field of the table, or a request's end
 * packed into one number (`result`, see SEGMENT). `dropped` slots are left out when they and every
 * slot after them are at their defaults.
 */
type Slot =
  | { readonly field: string; readonly dropped?: true }
  | { readonly result: Readonly<Record<string, number>>; readonly dropped: true };
const SERVER_RESULT = { failed: 4, released: 2, effectSpansDeclared: 1 } as const;
const ARRIVAL_RESULT = { failed: 4, released: 2 } as const;
const LAYOUT: Readonly<Record<AttemptKind, readonly Slot[]>> = {
  server: [
    { field: 'outcome' },
    { field: 'store' },
    { field: 'scope' },
    { result: SERVER_RESULT, dropped: true },
    { field: 'effect', dropped: true },
    { field: 'businessId', dropped: true },
  ],
  client: [
    { field: 'resendCount' },
    { field: 'target' },
    { field: 'statusCode' },
    { field: 'error' },
    { field: 'keyFrom', dropped: true },
  ],
  arrival: [
    { result: ARRIVAL_RESULT, dropped: true },
    { field: 'effect', dropped: true },
    { field: 'businessId', dropped: true },
  ],
  effect: [{ field: 'failed' }],
};
/** The fields every kind has at ENTRY's positions (the key is the segment's). */
const ENTRY_FIELDS: ReadonlySet<string> = new Set([
  'key',
  'tenant',
  'traceId',
  'spanId',
  'parentSpanId',
  'startUnixMillis',
  'endUnixMillis',
  'placement',
  'operation',
]);
const FIRST_SLOT = ENTRY.operation + 1;

/** Where a kind's own fields are, after ENTRY's. */
function positions<K extends AttemptKind>(kind: K): Record<string, number> {
  return Object.fromEntries(
    LAYOUT[kind].map((slot, i) => ['field' in slot ? slot.field : 'result', FIRST_SLOT + i]),
  );
}
export const SERVER = positions('server') as {
  readonly [F in 'outcome' | 'store' | 'scope' | 'result' | 'effect' | 'businessId']: number;
};
export const CLIENT = positions('client') as {
  readonly [F in 'resendCount' | 'target' | 'statusCode' | 'error' | 'keyFrom']: number;
};
export const ARRIVAL = positions('arrival') as { readonly [F in 'result' | 'effect' | 'businessId']: number };
export const EFFECT = positions('effect') as { readonly failed: number };

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
    WRITE_SLOTS[a.kind](out, a, placements);
    out.punctuation(CLOSE_BRACKET);
    previousTrace = a.traceId;
  }
  out.punctuation(CLOSE_BRACKET);
}

/**
 * Appends the attempts of a segment (its JSON text, see SEGMENT) to `into`, and returns it;
 * properties in the attempt table's order, so a read attempt equals the appended one.
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
    into.push(
      READ[f[ENTRY.kind] as number]!(
        f,
        placements,
        key,
        f[ENTRY.tenant],
        traceId,
        f[ENTRY.spanId],
        f[ENTRY.parentSpanId],
        startUnixMillis,
        at(startUnixMillis, f[ENTRY.end]),
        placements.placement(f[ENTRY.placementId] as number),
        f[ENTRY.operation],
      ),
    );
  }
  return into;
}

type WriteSlots = (out: JsonBytes, attempt: Attempt, placements: PlacementIds) => void;
type ReadEntry = (
  f: unknown[],
  placements: PlacementIds,
  key: string,
  tenant: unknown,
  traceId: string,
  spanId: unknown,
  parentSpanId: unknown,
  startUnixMillis: number,
  endUnixMillis: number,
  placement: Placement,
  operation: unknown,
) => Attempt;

/**
 * A kind's slots (LAYOUT's, then the table's fields it does not name), each with its value's
 * expression in JSON, its default, and the expression reading it back from the entry `f`.
 */
function slotsOf(
  kind: AttemptKind,
): { write: string; read: (at: string) => string; fields: string[]; dropped: boolean; fallback: string }[] {
  const fields: readonly AttemptField[] = ATTEMPT_FIELDS[kind];
  const named = new Set(
    LAYOUT[kind].flatMap((slot) =>
      'field' in slot ? [slot.field] : ['statusCode', ...Object.keys(slot.result)],
    ),
  );
  const byName = new Map(fields.map((field) => [field.name, field]));
  const appended = fields.filter((field) => !ENTRY_FIELDS.has(field.name) && !named.has(field.name));
  const slots = [
    ...LAYOUT[kind],
    ...appended.map((field) => {
      if (field.carried !== 'optional' && field.absentReadsAs === undefined)
        throw new RangeError(`attempt codec: ${kind} field ${field.name} needs absentReadsAs`);
      return { field: field.name, dropped: true as const };
    }),
  ];
  return slots.map((slot) => {
    if ('result' in slot) {
      // statusCode·8 + the flags' bits (see SEGMENT).
      const flags = Object.entries(slot.result);
      return {
        write: `a.statusCode * 8 ${flags.map(([name, bit]) => `+ (a.${name} ? ${bit} : 0)`).join(' ')}`,
        read: (at: string) => `(${at} ?? 0)`,
        fields: ['statusCode', ...flags.map(([name]) => name)],
        dropped: true,
        fallback: '0',
      };
    }
    const field = byName.get(slot.field);
    if (field === undefined)
      throw new RangeError(`attempt codec: ${kind} attempts have no field ${slot.field}`);
    const value = `a.${field.name}`;
    const absent = field.absentReadsAs;
    const dropped = slot.dropped === true;
    switch (field.carried) {
      case 'flag':
        return {
          write: `(${value} ? 1 : 0)`,
          read: (at) => `((${at} ?? ${absent ? 1 : 0}) === 1)`,
          fields: [field.name],
          dropped,
          fallback: absent ? '1' : '0',
        };
      case 'optional':
        return {
          write: `(${value} === ${literal(field.value)} ? 1 : 0)`,
          read: (at) => `(${at} === 1 ? ${literal(field.value)} : undefined)`,
          fields: [field.name],
          dropped,
          fallback: '0',
        };
      case 'placement':
        return {
          write: `placements.idOf(${value})`,
          read: (at) => `placements.placement(${at})`,
          fields: [field.name],
          dropped: false,
          fallback: '0',
        };
      default: {
        const fallback = literal(absent ?? (field.carried === 'number' || field.carried === 'time' ? 0 : ''));
        return {
          write: value,
          read: (at) => `(${at} ?? ${fallback})`,
          fields: [field.name],
          dropped,
          fallback,
        };
      }
    }
  });
}

/** Writes a kind's slots after ENTRY's, leaving out the trailing ones at their defaults. */
function slotWriterOf(kind: AttemptKind): WriteSlots {
  const slots = slotsOf(kind);
  const lines = slots.map((slot, i) => `const s${i} = ${slot.write};`);
  let end = 0;
  slots.forEach((slot, i) => {
    if (!slot.dropped) end = i + 1;
  });
  lines.push(`let end = ${end};`);
  slots.forEach((slot, i) => {
    if (slot.dropped && i >= end) lines.push(`if (s${i} !== ${slot.fallback}) end = ${i + 1};`);
  });
  slots.forEach((slot, i) => {
    const write = `out.${isString(kind, slot.fields) ? 'nextString' : 'nextNumber'}(s${i});`;
    lines.push(i < end ? write : `if (end > ${i}) ${write}`);
  });
  return compileFunction(['out', 'a', 'placements'], lines.join('\n'));
}

function isString(kind: AttemptKind, fields: string[]): boolean {
  if (fields.length !== 1) return false;
  const field = (ATTEMPT_FIELDS[kind] as readonly AttemptField[]).find((f) => f.name === fields[0])!;
  return ['key', 'name', 'text', 'id', 'closed'].includes(field.carried);
}

/** Reads an entry of a kind into an attempt with the table's order. */
function entryReaderOf(kind: AttemptKind): ReadEntry {
  const slots = slotsOf(kind);
  const lines: string[] = [];
  const values = new Map<string, string>();
  slots.forEach((slot, i) => {
    lines.push(`const s${i} = ${slot.read(`f[${FIRST_SLOT + i}]`)};`);
    if (slot.fields.length === 1) values.set(slot.fields[0]!, `s${i}`);
    else {
      values.set('statusCode', `Math.floor(s${i} / 8)`);
      const flags =
        'result' in LAYOUT[kind][i]! ? (LAYOUT[kind][i] as { result: Record<string, number> }).result : {};
      for (const [name, bit] of Object.entries(flags)) values.set(name, `(s${i} & ${bit}) !== 0`);
    }
  });
  lines.push(
    'let a;',
    attemptLiteral(kind, 'a', (field) => values.get(field.name) ?? field.name),
    'return a;',
  );
  return compileFunction(['f', 'placements', ...ENTRY_FIELDS], lines.join('\n'));
}

const WRITE_SLOTS: Readonly<Record<AttemptKind, WriteSlots>> = {
  server: slotWriterOf('server'),
  client: slotWriterOf('client'),
  arrival: slotWriterOf('arrival'),
  effect: slotWriterOf('effect'),
};
/** By code (`ENTRY.kind`). */
const READ: readonly ReadEntry[] = KINDS.map(entryReaderOf);

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
