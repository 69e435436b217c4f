import { type ErrorDefinition, KeyscopeError } from '@keyscope/errors';
import { type DecodeOptions, type KeyedAttributeSelection, SpanKind } from '@keyscope/otlp';
import { parseDocument } from 'yaml';
import {
  MAPPING_EMPTY_LIST,
  MAPPING_EMPTY_NAME,
  MAPPING_INVALID_VALUE,
  MAPPING_SYNTAX,
  MAPPING_UNKNOWN_KEY,
  MAPPING_WRONG_TYPE,
} from './errors.ts';

/**
 * The attribute mapping: which span and resource attributes the attempts stage reads for each
 * field. Every field is an ordered list of attribute names; extraction tries them in turn and
 * takes the first usable value, looking at the span's attributes and then the resource's for each
 * name. The placement fields (`service`, `node`, `cluster`, `region`, `zone`) are the exception:
 * they describe the emitting process, which OpenTelemetry models as the resource, so they are read
 * from resource attributes only (and computed once per resource, not once per span).
 */
export const MAPPING_FIELDS = [
  'key',
  'outcome',
  'hit',
  'store',
  'scope',
  'tenant',
  'operation',
  'service',
  'node',
  'cluster',
  'region',
  'zone',
  'resendCount',
  'statusCode',
  'serverAddress',
  'serverPort',
  'peerAddress',
  'errorType',
  'replayed',
  'effect',
  'released',
] as const;
export type MappingField = (typeof MAPPING_FIELDS)[number];

export const PLACEMENT_FIELDS: readonly MappingField[] = ['service', 'node', 'cluster', 'region', 'zone'];

/** Whether idempotency keys are unique globally or only within a tenant (see `partitionKey`). */
export type KeyNamespace = 'global' | 'tenant';
export const KEY_NAMESPACES: readonly KeyNamespace[] = ['global', 'tenant'];

/** Validated, frozen, plain data: safe to share, log and pass between stages. */
export interface Mapping {
  readonly fields: Readonly<Record<MappingField, readonly string[]>>;
  /** Derive an outcome from the HTTP response when a keyed SERVER span records none. */
  readonly inferOutcomeFromHttp: boolean;
  readonly keyNamespace: KeyNamespace;
  /** Width of the `NodeActivity` time buckets. */
  readonly activityBucketMillis: number;
  /**
   * Names of the spans that are the side effect (`ledger.charge`); a span of one of these names
   * that carries the key is a `SideEffect`. Empty (the default): no span is.
   */
  readonly sideEffectSpans: readonly string[];
}

const DEFAULT_FIELDS: Record<MappingField, readonly string[]> = {
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
};

const DEFAULT_OPTIONS = {
  inferOutcomeFromHttp: false,
  keyNamespace: 'global' as KeyNamespace,
  activityBucketMillis: 1000,
  sideEffectSpans: [] as readonly string[],
};

const TOP_LEVEL_KEYS = [
  'fields',
  'inferOutcomeFromHttp',
  'keyNamespace',
  'activityBucketMillis',
  'sideEffectSpans',
] as const;

export function defaultMapping(): Mapping {
  return freezeMapping({ fields: { ...DEFAULT_FIELDS }, ...DEFAULT_OPTIONS });
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
  const fail = (definition: ErrorDefinition, message: string): never => {
    throw new KeyscopeError(definition, `${sourceName}: ${message}`);
  };
  if (!isPlainObject(value)) {
    fail(
      MAPPING_WRONG_TYPE,
      `the mapping must be an object, received ${describe(value)}${value == null ? ' (an empty file? write {} for all defaults)' : ''}`,
    );
  }
  const input = value as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!(TOP_LEVEL_KEYS as readonly string[]).includes(key)) {
      fail(MAPPING_UNKNOWN_KEY, `${key} is not a known option; known: ${TOP_LEVEL_KEYS.join(', ')}`);
    }
  }

  const fields: Record<MappingField, readonly string[]> = { ...DEFAULT_FIELDS };
  if (input.fields !== undefined) {
    if (!isPlainObject(input.fields)) {
      fail(MAPPING_WRONG_TYPE, `fields must be an object, received ${describe(input.fields)}`);
    }
    const given = input.fields as Record<string, unknown>;
    for (const field of Object.keys(given)) {
      if (!(MAPPING_FIELDS as readonly string[]).includes(field)) {
        fail(
          MAPPING_UNKNOWN_KEY,
          `fields.${field} is not a known field; known: ${MAPPING_FIELDS.join(', ')}`,
        );
      }
      fields[field as MappingField] = parseNameList(given[field], `fields.${field}`, fail);
    }
  }

  const options = { ...DEFAULT_OPTIONS };
  if (input.inferOutcomeFromHttp !== undefined) {
    if (typeof input.inferOutcomeFromHttp !== 'boolean') {
      fail(
        MAPPING_WRONG_TYPE,
        `inferOutcomeFromHttp must be true or false, received ${describe(input.inferOutcomeFromHttp)}`,
      );
    }
    options.inferOutcomeFromHttp = input.inferOutcomeFromHttp as boolean;
  }
  if (input.keyNamespace !== undefined) {
    if (typeof input.keyNamespace !== 'string') {
      fail(MAPPING_WRONG_TYPE, `keyNamespace must be a string, received ${describe(input.keyNamespace)}`);
    }
    if (!(KEY_NAMESPACES as readonly string[]).includes(input.keyNamespace as string)) {
      fail(
        MAPPING_INVALID_VALUE,
        `keyNamespace must be one of ${KEY_NAMESPACES.join(', ')}, received ${JSON.stringify(input.keyNamespace)}`,
      );
    }
    options.keyNamespace = input.keyNamespace as KeyNamespace;
  }
  if (input.activityBucketMillis !== undefined) {
    const millis = input.activityBucketMillis;
    if (typeof millis !== 'number') {
      fail(MAPPING_WRONG_TYPE, `activityBucketMillis must be a number, received ${describe(millis)}`);
    }
    if (!Number.isSafeInteger(millis) || (millis as number) <= 0) {
      fail(MAPPING_INVALID_VALUE, `activityBucketMillis must be a positive integer, received ${millis}`);
    }
    options.activityBucketMillis = millis as number;
  }
  if (input.sideEffectSpans !== undefined) {
    const spans = input.sideEffectSpans;
    // Unlike a field, the list may be empty: it is off by default.
    options.sideEffectSpans =
      Array.isArray(spans) && spans.length === 0 ? [] : parseNameList(spans, 'sideEffectSpans', fail, 'span');
  }

  return freezeMapping({ fields, ...options });
}

function parseNameList(
  value: unknown,
  path: string,
  fail: (definition: ErrorDefinition, message: string) => never,
  of: 'attribute' | 'span' = 'attribute',
): readonly string[] {
  if (!Array.isArray(value)) {
    return fail(MAPPING_WRONG_TYPE, `${path} must be a list of ${of} names, received ${describe(value)}`);
  }
  if (value.length === 0) {
    return fail(
      MAPPING_EMPTY_LIST,
      `${path} must list at least one attribute name; omit it to keep the defaults`,
    );
  }
  const names: string[] = [];
  value.forEach((name, index) => {
    if (typeof name !== 'string') {
      fail(
        MAPPING_WRONG_TYPE,
        `${path}[${index}] must be ${of === 'span' ? 'a span' : 'an attribute'} name, received ${describe(name)}`,
      );
    }
    if ((name as string).trim() === '') {
      fail(MAPPING_EMPTY_NAME, `${path}[${index}] is an empty ${of} name`);
    }
    if (names.includes(name as string)) {
      fail(MAPPING_INVALID_VALUE, `${path}[${index}] repeats ${name}`);
    }
    names.push(name as string);
  });
  return names;
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

/**
 * What the OTLP decoders need to materialize for `extractAttempts` with `mapping`, for the
 * pipelines to pass with every payload (one object per mapping and `spans`, so the decoders'
 * per-filter caches hold). Attributes the mapping does not read are skipped. Of those it reads, a
 * span without a key only ever has its key and HTTP status code read (a SERVER span counts into
 * node activity, and a 5xx into its errors), so the rest are kept on keyed spans only
 * (`KeyedAttributeSelection`): most spans carry no key, and decoding their routes, peers and
 * ports cost about a third of the decode. Events are never read.
 *
 * `spans`: 'read' (the default) returns only the spans `extractAttempts` reads, those with a key
 * and SERVER spans without one: the others (a third of the bench's workload) are checked and
 * counted (`DecodedTraces.spanCount`) but not built, which took ~5% off the decode. 'all' returns
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
  const variant = (spanAttributes: KeyedAttributeSelection): DecodeOptions =>
    Object.freeze({
      spanAttributes: Object.freeze(spanAttributes),
      resourceAttributes: names.resource,
      events: false,
    });
  return {
    read: variant({ keys, always, whenKeyed, unkeyedKinds: UNKEYED_KINDS_READ }),
    all: variant({ keys, always, whenKeyed }),
  };
}

function freezeMapping(mapping: {
  fields: Record<MappingField, readonly string[]>;
  inferOutcomeFromHttp: boolean;
  keyNamespace: KeyNamespace;
  activityBucketMillis: number;
  sideEffectSpans: readonly string[];
}): Mapping {
  const fields = {} as Record<MappingField, readonly string[]>;
  for (const field of MAPPING_FIELDS) fields[field] = Object.freeze([...mapping.fields[field]]);
  return Object.freeze({
    fields: Object.freeze(fields),
    inferOutcomeFromHttp: mapping.inferOutcomeFromHttp,
    keyNamespace: mapping.keyNamespace,
    activityBucketMillis: mapping.activityBucketMillis,
    sideEffectSpans: Object.freeze([...mapping.sideEffectSpans]),
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}
