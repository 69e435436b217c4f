import type { Span, SpanKind } from './span.ts';

/**
 * What the decoders materialize. Most spans in a pipeline are not mutation attempts; a caller that
 * knows which attribute keys it reads passes them as sets, and every other attribute is skipped
 * by its length: its key is compared as bytes and neither key nor value is decoded (so a skipped
 * attribute is not checked for UTF-8 or nesting either: only the framing around it is).
 */
export interface DecodeOptions {
  /**
   * Span attribute keys to keep; default 'all'. A set is kept on every span; a
   * `KeyedAttributeSelection` keeps some keys only on the spans that carry a key. Event attributes
   * are always decoded in full.
   */
  spanAttributes?: 'all' | ReadonlySet<string> | KeyedAttributeSelection;
  /** Resource attribute keys to keep; default 'all'. */
  resourceAttributes?: 'all' | ReadonlySet<string>;
  /** false: skip span events (every span gets `events: []`); default true. */
  events?: boolean;
  /**
   * How many array/kvlist values may nest inside one attribute value; deeper input fails with
   * OTLP_NESTING. Default 32; at most MAX_NESTING_DEPTH, which bounds the decoders' recursion.
   */
  maxDepth?: number;
}

/**
 * A span attribute filter for consumers that read most attributes only on spans carrying a key
 * (keyscope reads the outcome, store, tenant, route or peer of a span only when it carries an
 * idempotency key, and that is a small share of the spans). A span is *keyed* when its own
 * attributes, or its resource's kept attributes, include one of `keys` (whatever the value).
 *
 * Kept on every span that has them: `keys` and `always`. Kept on keyed spans only: `whenKeyed`;
 * on other spans those are skipped like keys outside the filter, so their values are never
 * decoded. A key in two of the sets counts in the first of `keys`, `always`, `whenKeyed`.
 *
 * A span that is not keyed also comes without its ids and name (empty strings): the consumers a
 * selection is for read such spans only for their kind, times, status and kept attributes (node
 * activity), and building those strings was a sixth of the protobuf decoder's time on a
 * Collector's payloads. Its ids are still checked: a malformed or all-zero id fails the payload
 * as it would otherwise. Such spans cannot be encoded again.
 *
 * `unkeyedKinds`, when given, goes further: a span that carries no key and whose kind is not in it
 * is not returned at all (keyscope reads such spans only when they are SERVER spans). It is still
 * read and checked as any other span, so a payload fails or passes the same with or without it,
 * and it is counted in `DecodedTraces.spanCount`. Kinds outside the OTLP values count as
 * UNSPECIFIED, as they decode.
 *
 * `failedKinds` makes an exception to both: a span without a key whose kind is in it and whose
 * status is ERROR is returned, with its ids and name, and keeps the `linkAttributes` among
 * `whenKeyed` too, so that a consumer can give it the key of a keyed span it is linked to by ids
 * (keyscope gives a keyless CLIENT span that failed, a send that timed out, the key of the SERVER
 * spans naming it as their parent). Only failed spans: most CLIENT spans carry no key and succeed
 * (queries, GETs), and building them all cost a third of the decode. On the others the held-back
 * attributes are dropped as before. The link attributes of such a span are decoded, and so
 * checked (nesting, UTF-8), as a keyed span's are.
 *
 * Like key sets, a selection is compared by identity: pass the same object, unchanged, each time.
 */
export interface KeyedAttributeSelection {
  readonly keys: ReadonlySet<string>;
  readonly always: ReadonlySet<string>;
  readonly whenKeyed: ReadonlySet<string>;
  readonly unkeyedKinds?: ReadonlySet<SpanKind>;
  readonly failedKinds?: ReadonlySet<SpanKind>;
  /** Keys of `whenKeyed` kept on the failed spans of `failedKinds` without a key; none when absent. */
  readonly linkAttributes?: ReadonlySet<string>;
}

/** A request's decoded spans, and how many spans it held (returned or not: see `unkeyedKinds`). */
export interface DecodedTraces {
  readonly spans: Span[];
  readonly spanCount: number;
}

export const DEFAULT_MAX_DEPTH = 32;
/** Each level costs a few stack frames; this keeps the deepest legal input far from overflow. */
export const MAX_NESTING_DEPTH = 1000;

/** Options with defaults applied; `null` key sets mean "all". */
export interface ResolvedDecodeOptions {
  /** Every span attribute key that may be kept (for a selection, its three sets together). */
  readonly spanKeys: ReadonlySet<string> | null;
  /** The keyed selection, when `spanAttributes` was one. */
  readonly spanSelection: KeyedAttributeSelection | null;
  readonly resourceKeys: ReadonlySet<string> | null;
  readonly events: boolean;
  readonly maxDepth: number;
  /**
   * Bit k set: a span of kind k without a key is returned (see `unkeyedKinds`). Every bit is set
   * unless the options are a keyed selection with `unkeyedKinds`.
   */
  readonly unkeyedKindMask: number;
  /** Bit k set: a failed span of kind k without a key is returned with its ids (see `failedKinds`). */
  readonly failedKindMask: number;
}

/** Bits 0–5: every SpanKind. */
export const ALL_KINDS_MASK = 0b111111;

const DEFAULTS: ResolvedDecodeOptions = Object.freeze({
  spanKeys: null,
  spanSelection: null,
  unkeyedKindMask: ALL_KINDS_MASK,
  failedKindMask: 0,
  resourceKeys: null,
  events: true,
  maxDepth: DEFAULT_MAX_DEPTH,
});

/**
 * Applies defaults and checks the options. Options come from code, not from senders, so a bad
 * option is a programming error (TypeError/RangeError), never a KeyscopeError.
 */
export function resolveDecodeOptions(options: DecodeOptions | undefined): ResolvedDecodeOptions {
  if (options === undefined) return DEFAULTS;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (!Number.isInteger(maxDepth) || maxDepth < 0 || maxDepth > MAX_NESTING_DEPTH) {
    throw new RangeError(`maxDepth must be an integer from 0 to ${MAX_NESTING_DEPTH}, received ${maxDepth}`);
  }
  const span = options.spanAttributes;
  const spanSelection = isSelection(span) ? checkedSelection(span) : null;
  return {
    spanKeys:
      spanSelection === null
        ? keySet('spanAttributes', span as 'all' | ReadonlySet<string>)
        : unionOf(spanSelection),
    spanSelection,
    resourceKeys: keySet('resourceAttributes', options.resourceAttributes),
    events: options.events ?? true,
    maxDepth,
    unkeyedKindMask: spanSelection === null ? ALL_KINDS_MASK : kindMaskOf(spanSelection.unkeyedKinds),
    failedKindMask: spanSelection?.failedKinds === undefined ? 0 : kindMaskOf(spanSelection.failedKinds),
  };
}

function isSelection(value: DecodeOptions['spanAttributes']): value is KeyedAttributeSelection {
  return typeof value === 'object' && value !== null && !(value instanceof Set) && 'whenKeyed' in value;
}

function checkedSelection(selection: KeyedAttributeSelection): KeyedAttributeSelection {
  for (const part of ['keys', 'always', 'whenKeyed'] as const) {
    const keys: unknown = selection[part];
    if (!(keys instanceof Set)) throw new TypeError(`spanAttributes.${part} must be a Set of keys`);
  }
  for (const part of ['unkeyedKinds', 'failedKinds'] as const) {
    const kinds: unknown = selection[part];
    if (kinds === undefined) continue;
    if (!(kinds instanceof Set)) throw new TypeError(`spanAttributes.${part} must be a Set of span kinds`);
    for (const kind of kinds) {
      if (!Number.isInteger(kind) || kind < 0 || kind > 5) {
        throw new RangeError(`spanAttributes.${part} must hold span kinds 0 to 5, received ${kind}`);
      }
    }
  }
  const linkAttributes: unknown = selection.linkAttributes;
  if (linkAttributes !== undefined && !(linkAttributes instanceof Set)) {
    throw new TypeError('spanAttributes.linkAttributes must be a Set of keys');
  }
  return selection;
}

function kindMaskOf(kinds: ReadonlySet<SpanKind> | undefined): number {
  if (kinds === undefined) return ALL_KINDS_MASK;
  let mask = 0;
  for (const kind of kinds) mask |= 1 << kind;
  return mask;
}

/** One union per selection, so the JSON decoder's `has` runs on one set. */
const unions = new WeakMap<KeyedAttributeSelection, ReadonlySet<string>>();

function unionOf(selection: KeyedAttributeSelection): ReadonlySet<string> {
  let union = unions.get(selection);
  if (union === undefined) {
    union = new Set([...selection.keys, ...selection.always, ...selection.whenKeyed]);
    unions.set(selection, union);
  }
  return union;
}

const keyedOnly = new WeakMap<KeyedAttributeSelection, ReadonlySet<string>>();

/**
 * The keys a selection keeps on keyed spans only: `whenKeyed` without those also in `keys` or
 * `always` (a key counts in the first set that names it). One set per selection.
 */
export function keyedOnlyKeys(selection: KeyedAttributeSelection): ReadonlySet<string> {
  let keys = keyedOnly.get(selection);
  if (keys === undefined) {
    keys = new Set(
      [...selection.whenKeyed].filter((key) => !selection.keys.has(key) && !selection.always.has(key)),
    );
    keyedOnly.set(selection, keys);
  }
  return keys;
}

const linkedOnly = new WeakMap<KeyedAttributeSelection, ReadonlySet<string>>();

/**
 * The keys a selection keeps on keyed spans only and not on failed spans of `failedKinds` either:
 * `keyedOnlyKeys` without `linkAttributes`. One set per selection.
 */
export function keyedNotLinkedKeys(selection: KeyedAttributeSelection): ReadonlySet<string> {
  let keys = linkedOnly.get(selection);
  if (keys === undefined) {
    const link = selection.linkAttributes;
    keys = new Set([...keyedOnlyKeys(selection)].filter((key) => link?.has(key) !== true));
    linkedOnly.set(selection, keys);
  }
  return keys;
}

function keySet(name: string, value: 'all' | ReadonlySet<string> | undefined): ReadonlySet<string> | null {
  if (value === undefined || value === 'all') return null;
  if (typeof value !== 'object' || value === null || typeof value.has !== 'function') {
    throw new TypeError(`${name} must be 'all' or a Set of keys`);
  }
  return value;
}
