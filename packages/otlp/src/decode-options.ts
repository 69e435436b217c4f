/**
 * What the decoders materialize. Most spans in a pipeline are not mutation attempts; a caller that
 * knows which attribute keys it reads passes them as sets, and every other attribute is skipped
 * by its length: its key is compared as bytes and neither key nor value is decoded (so a skipped
 * attribute is not checked for UTF-8 or nesting either: only the framing around it is).
 */
export interface DecodeOptions {
  /** Span attribute keys to keep; default 'all'. Event attributes are always decoded in full. */
  spanAttributes?: 'all' | ReadonlySet<string>;
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

export const DEFAULT_MAX_DEPTH = 32;
/** Each level costs a few stack frames; this keeps the deepest legal input far from overflow. */
export const MAX_NESTING_DEPTH = 1000;

/** Options with defaults applied; `null` key sets mean "all". */
export interface ResolvedDecodeOptions {
  readonly spanKeys: ReadonlySet<string> | null;
  readonly resourceKeys: ReadonlySet<string> | null;
  readonly events: boolean;
  readonly maxDepth: number;
}

const DEFAULTS: ResolvedDecodeOptions = Object.freeze({
  spanKeys: null,
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
  return {
    spanKeys: keySet('spanAttributes', options.spanAttributes),
    resourceKeys: keySet('resourceAttributes', options.resourceAttributes),
    events: options.events ?? true,
    maxDepth,
  };
}

function keySet(name: string, value: 'all' | ReadonlySet<string> | undefined): ReadonlySet<string> | null {
  if (value === undefined || value === 'all') return null;
  if (typeof value !== 'object' || value === null || typeof value.has !== 'function') {
    throw new TypeError(`${name} must be 'all' or a Set of keys`);
  }
  return value;
}
