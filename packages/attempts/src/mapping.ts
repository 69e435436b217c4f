import {
  boolean,
  type ConfigOf,
  configSchema,
  custom,
  type FieldPath,
  type FieldSpec,
  integer,
  KeyscopeError,
  object,
  oneOf,
} from '@keyscope/errors';
import { type DecodeOptions, type KeyedAttributeSelection, SpanKind } from '@keyscope/otlp';
import { parseDocument } from 'yaml';
import { SCOPE_LEVELS, type ScopeLevel } from './attempt.ts';
import {
  MAPPING_EMPTY_LIST,
  MAPPING_EMPTY_NAME,
  MAPPING_INVALID_VALUE,
  MAPPING_SYNTAX,
  MAPPING_UNKNOWN_KEY,
  MAPPING_WRONG_TYPE,
} from './errors.ts';

/**
 * The attribute mapping's fields: which span and resource attributes the attempts stage reads for
 * each. Every field is an ordered list of attribute names; extraction tries them in turn and takes
 * the first usable value, looking at the span's attributes and then the resource's for each name.
 * The placement fields (`service`, `node`, `cluster`, `region`, `zone`) are the exception: they
 * describe the emitting process, which OpenTelemetry models as the resource, so they are read from
 * resource attributes only (and computed once per resource, not once per span).
 */
const DEFAULT_FIELDS = {
  key: ['idempotency.key', 'http.request.header.idempotency-key'],
  outcome: ['idempotency.outcome'],
  hit: ['idempotency.hit'],
  store: ['idempotency.store'],
  scope: ['idempotency.scope'],
  tenant: ['tenant.id'],
  // The span name is the last fallback for `operation`, after these names; it is not an attribute.
  operation: ['http.route'],
  service: ['service.name'],
  node: ['service.instance.id', 'host.name'],
  cluster: ['k8s.cluster.name'],
  region: ['cloud.region'],
  zone: ['cloud.availability_zone'],
  resendCount: ['http.request.resend_count'],
  statusCode: ['http.response.status_code'],
  serverAddress: ['server.address'],
  serverPort: ['server.port'],
  peerAddress: ['network.peer.address'],
  errorType: ['error.type'],
  replayed: ['http.response.header.idempotent-replayed'],
  effect: ['idempotency.effect'],
  released: ['idempotency.released'],
  // What the business calls the mutation (`payment.id`), for the people who reconcile a duplicate:
  // none by default, since no convention names one.
  businessId: [],
  // The request's method, for titles that name the endpoint (`POST /payments`); the older
  // convention's name after the current one.
  method: ['http.request.method', 'http.method'],
} as const satisfies Record<string, readonly string[]>;

/** Fields read only when the mapping names attributes for them: their list may be empty. */
const OPTIONAL_FIELDS: ReadonlySet<string> = new Set(['businessId']);

/**
 * Each field's attribute names, tried in turn. A given list replaces the default one entirely
 * (list the defaults too to keep them as fallbacks), so it may not be empty, except for an
 * optional field's.
 */
const FIELDS = object(
  Object.fromEntries(
    Object.entries(DEFAULT_FIELDS).map(([field, names]) => [
      field,
      custom(nameList('attribute', { mayBeEmpty: OPTIONAL_FIELDS.has(field) }), { default: names }),
    ]),
  ) as { readonly [F in keyof typeof DEFAULT_FIELDS]: FieldSpec<readonly string[], 'default'> },
);

export type MappingField = keyof typeof FIELDS.fields;
export const MAPPING_FIELDS: readonly MappingField[] = Object.freeze(
  Object.keys(FIELDS.fields) as MappingField[],
);

export const PLACEMENT_FIELDS: readonly MappingField[] = ['service', 'node', 'cluster', 'region', 'zone'];

/** Whether idempotency keys are unique globally or only within a tenant (see `partitionKey`). */
export type KeyNamespace = 'global' | 'tenant';
export const KEY_NAMESPACES: readonly KeyNamespace[] = ['global', 'tenant'];

const MAPPING = configSchema(
  {
    fields: FIELDS,
    /** Derive an outcome from the HTTP response when a keyed SERVER span records none. */
    inferOutcomeFromHttp: boolean({ default: false }),
    keyNamespace: oneOf(KEY_NAMESPACES, { default: 'global' }),
    /** Width of the `NodeActivity` time buckets. */
    activityBucketMillis: integer({ default: 1000 }),
    /**
     * Names of the spans that are the side effect (`ledger.charge`); a span of one of these names
     * that carries the key is a `SideEffect`. Empty (the default): no span is. Unlike a field, the
     * list may be empty: it is off by default.
     */
    sideEffectSpans: custom(nameList('span', { mayBeEmpty: true }), { default: [] }),
    /**
     * Key scopes declared per service (and optionally per operation), for services whose spans
     * carry neither `idempotency.scope` nor `idempotency.store` (say, only captured headers): their
     * decisions take the store of that scope (`payments/node:<node>`, store-id.ts) instead of one
     * unknown store per service. An entry with an operation wins over the service's own; a span's
     * own scope or store wins over both. Empty (the default): none is declared.
     */
    scopes: custom(scopeList, { default: [] }),
    /**
     * Collapse the ids in an operation that is a URL path (`POST /payments/8f3a…` →
     * `POST /payments/{id}`, operation-ids.ts): one tier per route, not one per payment. On by
     * default; off keeps every operation as the spans name it.
     */
    collapseOperationIds: boolean({ default: true }),
    /**
     * More path segments to collapse to `{id}`: regular expressions, each matched against a whole
     * segment (`'[A-Z]{2}-[0-9a-z]+'` for `FR-a1b2`). Empty (the default): the built-in shapes only.
     */
    operationIdPatterns: custom(patternList, { default: [] }),
  },
  {
    errors: {
      wrongType: MAPPING_WRONG_TYPE,
      invalidValue: MAPPING_INVALID_VALUE,
      unknownKey: MAPPING_UNKNOWN_KEY,
    },
    // "mapping" is this file's name; its JSON objects are objects.
    objects: 'object',
    rootName: 'the mapping',
    unknownKeyMessage: (parent, key, known) =>
      parent === ''
        ? `${key} is not a known option; known: ${known.join(', ')}`
        : `${parent}.${key} is not a known field; known: ${known.join(', ')}`,
  },
);

/** Validated, frozen, plain data: safe to share, log and pass between stages. */
export type Mapping = ConfigOf<typeof MAPPING.fields>;

export function defaultMapping(): Mapping {
  return MAPPING.defaults;
}

/**
 * Parses a mapping file's text (YAML; JSON is valid YAML). Throws a `KeyscopeError` with a
 * `KS_MAPPING_*` code whose message starts with `sourceName` and names the offending path.
 */
export function loadMapping(text: string, sourceName: string): Mapping {
  const document = parseDocument(text, { prettyErrors: true });
  const problem = document.errors[0] ?? document.warnings[0];
  if (problem !== undefined) {
    throw new KeyscopeError(MAPPING_SYNTAX, `${sourceName}: not valid YAML or JSON: ${problem.message}`, {
      cause: problem,
    });
  }
  return parseMapping(document.toJS(), sourceName);
}

/**
 * Validates an already-parsed mapping object against the strict schema. A field that is given
 * replaces that field's default list entirely (list the defaults too to keep them as fallbacks);
 * fields and options that are not given keep their defaults.
 */
export function parseMapping(value: unknown, sourceName = 'mapping'): Mapping {
  if (value === null || value === undefined) {
    const at = MAPPING.at('', sourceName);
    throw at.wrongType(
      'an object',
      value,
      `${at.describe(value)} (an empty file? write {} for all defaults)`,
    );
  }
  return MAPPING.parse(value, { source: sourceName });
}

/** One declared key scope: a service's (every operation), or one operation's of it. */
export interface DeclaredScope {
  readonly service: string;
  readonly operation?: string;
  readonly scope: ScopeLevel;
}

function scopeList(value: unknown, at: FieldPath): readonly DeclaredScope[] {
  if (!Array.isArray(value)) throw at.wrongType('a list of { service, operation?, scope }', value);
  const seen = new Set<string>();
  return value.map((entry, index) => {
    const item = at.item(index);
    const fields = item.object(entry, ['service', 'operation', 'scope']);
    const text = (name: string, required: boolean): string | undefined => {
      const field = fields[name];
      if (field === undefined && !required) return undefined;
      if (typeof field !== 'string') throw item.child(name).wrongType('a string', field);
      if (field.trim() === '')
        throw item.child(name).refuse(MAPPING_EMPTY_NAME, `${item.child(name).name} is empty`);
      return field;
    };
    const service = text('service', true)!;
    const operation = text('operation', false);
    const scope = fields.scope;
    if (typeof scope !== 'string' || !(SCOPE_LEVELS as readonly string[]).includes(scope)) {
      throw item.child('scope').invalid(`one of ${SCOPE_LEVELS.join(', ')}`, scope);
    }
    const where = `${service}\u0000${operation ?? ''}`;
    if (seen.has(where)) {
      throw item.refuse(
        MAPPING_INVALID_VALUE,
        `${item.name} declares ${service}${operation === undefined ? '' : ` ${operation}`} again`,
      );
    }
    seen.add(where);
    return Object.freeze({
      service,
      ...(operation === undefined ? {} : { operation }),
      scope: scope as ScopeLevel,
    });
  });
}

function patternList(value: unknown, at: FieldPath): readonly string[] {
  if (!Array.isArray(value)) throw at.wrongType('a list of regular expressions', value);
  return value.map((pattern, index) => {
    const item = at.item(index);
    if (typeof pattern !== 'string') throw item.wrongType('a regular expression', pattern);
    if (pattern === '') throw item.refuse(MAPPING_EMPTY_NAME, `${item.name} is an empty pattern`);
    try {
      new RegExp(pattern, 'u');
    } catch (error) {
      throw item.refuse(
        MAPPING_INVALID_VALUE,
        `${item.name} is not a regular expression: ${(error as Error).message}`,
      );
    }
    return pattern;
  });
}

/** A list of distinct, non-blank attribute or span names. */
function nameList(of: 'attribute' | 'span', options: { mayBeEmpty?: boolean } = {}) {
  return (value: unknown, at: FieldPath): readonly string[] => {
    if (!Array.isArray(value)) throw at.wrongType(`a list of ${of} names`, value);
    if (value.length === 0 && !options.mayBeEmpty) {
      throw at.refuse(
        MAPPING_EMPTY_LIST,
        `${at.name} must list at least one attribute name; omit it to keep the defaults`,
      );
    }
    const names: string[] = [];
    value.forEach((name, index) => {
      const item = at.item(index);
      if (typeof name !== 'string')
        throw item.wrongType(`${of === 'span' ? 'a span' : 'an attribute'} name`, name);
      if (name.trim() === '') throw item.refuse(MAPPING_EMPTY_NAME, `${item.name} is an empty ${of} name`);
      if (names.includes(name)) throw item.refuse(MAPPING_INVALID_VALUE, `${item.name} repeats ${name}`);
      names.push(name);
    });
    return names;
  };
}

/**
 * Every attribute name the mapping reads, for the OTLP decoder's attribute filter
 * (`DecodeOptions.spanAttributes` / `resourceAttributes`): attributes outside these sets need not
 * be materialized. Non-placement fields are tried on the span and then the resource, so their
 * names are in both sets; placement fields are read from the resource only.
 */
export function mappingAttributeNames(mapping: Mapping): { span: Set<string>; resource: Set<string> } {
  const span = new Set<string>();
  const resource = new Set<string>();
  for (const field of MAPPING_FIELDS) {
    const placement = PLACEMENT_FIELDS.includes(field);
    for (const name of mapping.fields[field]) {
      resource.add(name);
      if (!placement) span.add(name);
    }
  }
  return { span, resource };
}

const decodeOptions = new WeakMap<Mapping, Record<MappingSpans, DecodeOptions>>();

/** Which spans `mappingDecodeOptions` asks the decoders to return. */
export type MappingSpans = 'read' | 'all';

/** The kinds `extractAttempts` reads on a span without a key: SERVER, for node activity. */
const UNKEYED_KINDS_READ: ReadonlySet<SpanKind> = new Set([SpanKind.SERVER]);
/** Failed spans without a key that keep their ids and what a client attempt reads: sends, for `SendLinker`. */
const FAILED_KINDS: ReadonlySet<SpanKind> = new Set([SpanKind.CLIENT]);
/** The fields a client attempt reads, but its key and tenant (a linked send takes its server span's). */
const SEND_FIELDS = [
  'operation',
  'resendCount',
  'serverAddress',
  'serverPort',
  'peerAddress',
  'errorType',
] as const;

/**
 * What the OTLP decoders need to materialize for `extractAttempts` with `mapping`, for the
 * pipelines to pass with every payload (one object per mapping and `spans`, so the decoders'
 * per-filter caches hold). Attributes the mapping does not read are skipped. Of those it reads, a
 * span without a key only ever has its key and HTTP status code read (a SERVER span counts into
 * node activity, and a 5xx into its errors), so the rest are kept on keyed spans only
 * (`KeyedAttributeSelection`): most spans carry no key, and decoding their routes, peers and
 * ports cost about a third of the decode. Events are never read.
 *
 * A CLIENT span without a key that failed keeps its ids and what a client attempt reads
 * (`failedKinds`): a send that timed out carries no key, and `SendLinker` gives it the key of the
 * server spans that name it as their parent.
 *
 * `spans`: 'read' (the default) returns only the spans `extractAttempts` reads, those with a key,
 * SERVER spans without one and failed CLIENT spans: the others (a third of the bench's workload)
 * are checked and counted (`DecodedTraces.spanCount`) but not built, which took ~5% off the
 * decode. 'all' returns
 * every span, for a caller that reads more of each span than `extractAttempts` does (the time
 * window of an archive).
 */
export function mappingDecodeOptions(mapping: Mapping, spans: MappingSpans = 'read'): DecodeOptions {
  let variants = decodeOptions.get(mapping);
  if (variants === undefined) {
    variants = decodeOptionVariants(mapping);
    decodeOptions.set(mapping, variants);
  }
  return variants[spans];
}

/** Both variants, sharing their key sets: the decoders cache resources per resource key set. */
function decodeOptionVariants(mapping: Mapping): Record<MappingSpans, DecodeOptions> {
  const names = mappingAttributeNames(mapping);
  const keys = new Set(mapping.fields.key);
  const always = new Set(mapping.fields.statusCode);
  const whenKeyed = new Set([...names.span].filter((name) => !keys.has(name) && !always.has(name)));
  const linkAttributes = new Set(SEND_FIELDS.flatMap((field) => mapping.fields[field]));
  const variant = (spanAttributes: KeyedAttributeSelection): DecodeOptions =>
    Object.freeze({
      spanAttributes: Object.freeze(spanAttributes),
      resourceAttributes: names.resource,
      events: false,
    });
  const linked = { failedKinds: FAILED_KINDS, linkAttributes };
  return {
    read: variant({ keys, always, whenKeyed, unkeyedKinds: UNKEYED_KINDS_READ, ...linked }),
    all: variant({ keys, always, whenKeyed, ...linked }),
  };
}
