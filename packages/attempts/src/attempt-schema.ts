import {
  type Arrival,
  type Attempt,
  type ClientAttempt,
  EFFECTS,
  HTTP_METHODS,
  type KeylessSend,
  OUTCOMES,
  type Placement,
  SCOPE_LEVELS,
  type ServerAttempt,
  type SideEffect,
} from './attempt.ts';

/**
 * The one declaration of an attempt's fields: for each kind, its fields in the order extraction
 * creates them, each with how it is carried. Every codec (the thread batches, the detector's
 * compact records, the store's segments, the attempts topic) walks these lists, and the
 * constructors below build attempts from them, so that every attempt of a kind has one shape
 * (V8 gives objects whose properties were added in one order one hidden class, and the detector's
 * code reading attempts stays monomorphic). Adding a field is a line here, the rule that reads
 * it in extraction, and their tests.
 *
 * How a field is carried:
 * - `key`: the idempotency key, text a record may leave out when its list is the key's;
 * - `name`: text from a small set (tenants, operations, stores, targets), interned by codecs;
 * - `text`: free text, never interned (business ids, error messages);
 * - `id`: a trace or span id, `bytes` bytes as lowercase hex when it is, else any text; '' for none;
 * - `time`: Unix epoch milliseconds, fractional;
 * - `number`: any number, usually a small non-negative integer (a status code, a count);
 * - `closed`: one of `values`;
 * - `flag`: true or false;
 * - `optional`: `value`, or absent (the property is left out, not undefined);
 * - `placement`: the span's `Placement`.
 *
 * `absentReadsAs` is what a record written before the field existed reads as: records already on
 * the attempts topic and segments already in a store lack it. A field added to the table needs
 * one (an `optional` field reads as absent).
 */
export type FieldCarriage =
  | { readonly carried: 'key' | 'name' | 'text' | 'time' | 'number' | 'flag' | 'placement' }
  | { readonly carried: 'id'; readonly bytes: 8 | 16 }
  | { readonly carried: 'closed'; readonly values: readonly string[] }
  | { readonly carried: 'optional'; readonly value: string };

export type AttemptField = FieldCarriage & {
  readonly name: string;
  readonly absentReadsAs?: string | number | boolean;
};

export type AttemptKind = Attempt['kind'];

const COMMON_FIELDS = [
  { name: 'key', carried: 'key' },
  { name: 'tenant', carried: 'name' },
  { name: 'traceId', carried: 'id', bytes: 16 },
  { name: 'spanId', carried: 'id', bytes: 8 },
  { name: 'parentSpanId', carried: 'id', bytes: 8 },
  { name: 'startUnixMillis', carried: 'time' },
  { name: 'endUnixMillis', carried: 'time' },
  { name: 'placement', carried: 'placement' },
  { name: 'operation', carried: 'name' },
] as const satisfies readonly AttemptField[];

/** '' (not stated) and the closed lists. */
const SCOPES = ['', ...SCOPE_LEVELS] as const;
const STATED_EFFECTS = ['', ...EFFECTS] as const;

/** How a request ended, on server attempts and arrivals; attempts on the topic before it read as a silent success. */
const STATUS_CODE = { name: 'statusCode', carried: 'number', absentReadsAs: 0 } as const;
const FAILED = { name: 'failed', carried: 'flag', absentReadsAs: false } as const;
const EFFECT = { name: 'effect', carried: 'closed', values: STATED_EFFECTS, absentReadsAs: '' } as const;
const RELEASED = { name: 'released', carried: 'flag', absentReadsAs: false } as const;
const BUSINESS_ID = { name: 'businessId', carried: 'text', absentReadsAs: '' } as const;
const METHODS = ['', ...HTTP_METHODS] as const;
const METHOD = { name: 'method', carried: 'closed', values: METHODS, absentReadsAs: '' } as const;

export const ATTEMPT_FIELDS = {
  server: [
    ...COMMON_FIELDS,
    { name: 'outcome', carried: 'closed', values: OUTCOMES as readonly ServerAttempt['outcome'][] },
    { name: 'store', carried: 'name' },
    { name: 'scope', carried: 'closed', values: SCOPES },
    STATUS_CODE,
    FAILED,
    EFFECT,
    RELEASED,
    BUSINESS_ID,
    { name: 'effectSpansDeclared', carried: 'flag', absentReadsAs: false },
    { name: 'outcomeFrom', carried: 'optional', value: 'http' },
    // Last: records and segments written before it end where it would start.
    METHOD,
  ],
  arrival: [...COMMON_FIELDS, STATUS_CODE, FAILED, EFFECT, RELEASED, BUSINESS_ID, METHOD],
  client: [
    ...COMMON_FIELDS,
    { name: 'resendCount', carried: 'number' },
    { name: 'target', carried: 'name' },
    { name: 'statusCode', carried: 'number' },
    { name: 'error', carried: 'text' },
    { name: 'keyFrom', carried: 'optional', value: 'child' },
  ],
  effect: [...COMMON_FIELDS, { name: 'failed', carried: 'flag' }],
} as const satisfies Record<AttemptKind, readonly AttemptField[]>;

/** A keyless send's fields: a client attempt's but for the key, the tenant and `keyFrom`. */
export const KEYLESS_SEND_FIELDS: readonly AttemptField[] = ATTEMPT_FIELDS.client.filter(
  (field) => field.name !== 'key' && field.name !== 'tenant' && field.name !== 'keyFrom',
);

export const ATTEMPT_KINDS: readonly AttemptKind[] = ['server', 'arrival', 'client', 'effect'];

/** The fields of an attempt of `kind` (its `kind` aside), as the table declares them. */
export type AttemptFields<A extends { kind: string }> = Omit<A, 'kind'>;

/**
 * Builds `code` (a function body over `params`) once, when a codec loads: codecs generate their
 * per-kind functions from the table so that they run as fast as code written field by field.
 */
export function compileFunction<F>(params: readonly string[], code: string): F {
  return new Function(...params, code) as F;
}

/** `value` as a JavaScript literal, for generated code. */
export function literal(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * The source of an object literal of an attempt of `kind`, in the table's order, its values the
 * expressions `expression` gives for each field; optional fields go in by an `if` after it, when
 * not undefined. Assigns it to `target` (a declared variable).
 */
export function attemptLiteral(
  kind: AttemptKind | 'send',
  target: string,
  expression: (field: AttemptField, index: number) => string,
): string {
  const fields = kind === 'send' ? KEYLESS_SEND_FIELDS : ATTEMPT_FIELDS[kind];
  const required: string[] = [];
  const optional: string[] = [];
  fields.forEach((field, i) => {
    const value = expression(field, i);
    if (field.carried === 'optional')
      optional.push(
        `{ const optional = ${value}; if (optional !== undefined) ${target}.${field.name} = optional; }`,
      );
    else required.push(`${field.name}: ${value}`);
  });
  const kindName = kind === 'send' ? 'client' : kind;
  return `${target} = { kind: ${literal(kindName)}, ${required.join(', ')} };\n${optional.join('\n')}`;
}

function constructorOf<A extends { kind: string }>(
  kind: AttemptKind | 'send',
): (fields: AttemptFields<A>) => A {
  return compileFunction(
    ['f'],
    `let a;\n${attemptLiteral(kind, 'a', (field) => `f.${field.name}`)}\nreturn a;`,
  );
}

/**
 * Attempts with their properties in the table's order, whatever the order of `fields`: every
 * attempt of a kind built here (or by a codec) has one shape.
 */
export const createServerAttempt: (fields: AttemptFields<ServerAttempt>) => ServerAttempt =
  constructorOf('server');
export const createArrival: (fields: AttemptFields<Arrival>) => Arrival = constructorOf('arrival');
export const createClientAttempt: (fields: AttemptFields<ClientAttempt>) => ClientAttempt =
  constructorOf('client');
export const createSideEffect: (fields: AttemptFields<SideEffect>) => SideEffect = constructorOf('effect');
export const createKeylessSend: (fields: AttemptFields<KeylessSend>) => KeylessSend = constructorOf('send');

/** Attempts of each kind from their values in the table's order (a codec's decoded values). */
export const attemptFromValues: Readonly<Record<AttemptKind, (values: readonly unknown[]) => Attempt>> = {
  server: fromValues('server'),
  arrival: fromValues('arrival'),
  client: fromValues('client'),
  effect: fromValues('effect'),
};

function fromValues(kind: AttemptKind): (values: readonly unknown[]) => Attempt {
  return compileFunction(['v'], `let a;\n${attemptLiteral(kind, 'a', (_, i) => `v[${i}]`)}\nreturn a;`);
}

// The table and the types agree: every property of each kind is in its list, every listed field
// is a property, and each is carried as a value of its type.
type FieldValue<F> = F extends { carried: 'key' | 'name' | 'text' | 'id' }
  ? string
  : F extends { carried: 'time' | 'number' }
    ? number
    : F extends { carried: 'flag' }
      ? boolean
      : F extends { carried: 'placement' }
        ? Placement
        : F extends { carried: 'closed'; values: readonly (infer V)[] }
          ? V
          : F extends { carried: 'optional'; value: infer V }
            ? V
            : never;
type TableOf<K extends AttemptKind> = (typeof ATTEMPT_FIELDS)[K][number];
type TableValues<K extends AttemptKind> = { [F in TableOf<K> as F['name']]: FieldValue<F> };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Agrees<K extends AttemptKind, A extends Attempt> = Same<
  TableValues<K>,
  { [P in keyof AttemptFields<A>]-?: AttemptFields<A>[P] }
>;
const tableMatchesTypes: [
  Agrees<'server', ServerAttempt>,
  Agrees<'arrival', Arrival>,
  Agrees<'client', ClientAttempt>,
  Agrees<'effect', SideEffect>,
] = [true, true, true, true];
void tableMatchesTypes;
