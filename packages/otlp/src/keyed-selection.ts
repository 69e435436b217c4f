import { carriesKey, createAttributes } from './attributes.ts';
import { type KeyedAttributeSelection, keyedOnlyKeys } from './decode-options.ts';
import { KeyMatcher } from './key-matcher.ts';
import type { Attributes, Resource } from './span.ts';

/** `StatusCode.ERROR`, as the protobuf decoder reads it. */
const STATUS_ERROR = 2;

/** Groups of `KeyedSelection.eager`, as `KeyMatcher.find` reports them. */
export const KEY_GROUP = { ALWAYS: 0, KEY: 1 } as const;

/** Decodes the AnyValue at `[valueStart, valueEnd)` of the request being read into `target[key]`. */
export interface AttributeValueDecoder {
  value(target: Attributes, key: string, valueStart: number, valueEnd: number, depth: number): void;
}

/**
 * A `KeyedAttributeSelection` as the protobuf decoder applies it, one span at a time: which
 * attributes it keeps on every span (`eager`), whether the span being read is keyed, and the
 * `whenKeyed` attributes met before that was known.
 *
 * Protobuf does not order a span's attributes, and the key may come after attributes kept only
 * on keyed spans. Those are located (key and value bounds), neither matched exactly nor decoded,
 * and held back; when a key turns up they are matched and decoded, in order, so a repeated key
 * keeps its last value; at the span's end without a key they are dropped, but for the
 * `linkAttributes` of a failed span of `failedKinds` (see `linkedAttributes`).
 *
 * The decoder that owns it reads one request at a time and calls `beginResource` for every
 * ResourceSpans and `beginSpan` for every span, which reset what the previous one left.
 */
export class KeyedSelection {
  /** `keys` (group KEY) and `always` (group ALWAYS): matched on every span. */
  readonly eager: KeyMatcher;
  /** The keys kept on keyed spans only; a span not yet known to be keyed only pre-checks them. */
  private readonly deferred: KeyMatcher;
  private readonly keys: ReadonlySet<string>;
  /** See `ResolvedDecodeOptions.unkeyedKindMask`. */
  private readonly unkeyedKindMask: number;
  /** See `ResolvedDecodeOptions.failedKindMask`. */
  private readonly failedKindMask: number;
  private readonly linkAttributes: ReadonlySet<string>;
  /** Whether the current ResourceSpans' resource carries a key. */
  private resourceKeyed = false;
  /** Whether the span being read is keyed. */
  keyed = false;
  /** Held back attributes: four numbers each (key start and end, value start and end). */
  private pendingCount = 0;
  private readonly pending: number[] = [];

  constructor(selection: KeyedAttributeSelection, unkeyedKindMask: number, failedKindMask: number) {
    this.keys = selection.keys;
    this.eager = new KeyMatcher(new Set([...selection.keys, ...selection.always]), (key) =>
      selection.keys.has(key) ? KEY_GROUP.KEY : KEY_GROUP.ALWAYS,
    );
    this.deferred = new KeyMatcher(keyedOnlyKeys(selection));
    this.unkeyedKindMask = unkeyedKindMask;
    this.failedKindMask = failedKindMask;
    this.linkAttributes = selection.linkAttributes ?? new Set();
  }

  /** The spans of the next ResourceSpans belong to `resource` (with its kept attributes). */
  beginResource(resource: Resource): void {
    this.resourceKeyed = carriesKey(resource.attributes, this.keys);
  }

  beginSpan(): void {
    this.keyed = this.resourceKeyed;
    this.pendingCount = 0;
  }

  /** Whether the span just read, of `kind` and status `statusCode`, is returned (see `unkeyedKinds`). */
  returns(kind: number, statusCode: number): boolean {
    return this.keyed || ((this.unkeyedKindMask >>> kind) & 1) !== 0 || this.failed(kind, statusCode);
  }

  /** Whether the span just read comes with its ids and name: keyed, or failed (see `failedKinds`). */
  identifies(kind: number, statusCode: number): boolean {
    return this.keyed || this.failed(kind, statusCode);
  }

  private failed(kind: number, statusCode: number): boolean {
    return statusCode === STATUS_ERROR && ((this.failedKindMask >>> kind) & 1) !== 0;
  }

  /**
   * At the end of a span without a key that `identifies`: its held-back `linkAttributes`
   * decoded into `target` (created on the first one), in order, which it returns. Leaves the
   * reader anywhere: callers reposition it.
   */
  linkedAttributes(
    bytes: Uint8Array,
    view: DataView,
    target: Attributes | null,
    decoder: AttributeValueDecoder,
  ): Attributes | null {
    const pending = this.pending;
    for (let i = 0; i < this.pendingCount; i += 4) {
      const key = this.deferred.match(bytes, pending[i]!, pending[i + 1]!, view);
      if (key === undefined || !this.linkAttributes.has(key)) continue;
      target ??= createAttributes();
      decoder.value(target, key, pending[i + 2]!, pending[i + 3]!, 0);
    }
    this.pendingCount = 0;
    return target;
  }

  /**
   * A `keys` attribute was met: the span is keyed. The attributes held back until now are
   * decoded into `target` first, so the caller decodes the key's own value after them. Leaves
   * the reader anywhere: callers reposition it.
   */
  keyFound(bytes: Uint8Array, view: DataView, target: Attributes, decoder: AttributeValueDecoder): void {
    if (this.keyed) return;
    this.keyed = true;
    const pending = this.pending;
    for (let i = 0; i < this.pendingCount; i += 4) {
      const key = this.deferred.match(bytes, pending[i]!, pending[i + 1]!, view);
      if (key !== undefined) decoder.value(target, key, pending[i + 2]!, pending[i + 3]!, 0);
    }
    this.pendingCount = 0;
  }

  /**
   * An attribute outside `keys` and `always`: on a keyed span, the `whenKeyed` key it is (its
   * value to be decoded now) or undefined; on a span not (yet) known to be keyed, undefined, and
   * held back if its key may be one of them (see `keyFound`).
   */
  whenKeyed(
    bytes: Uint8Array,
    view: DataView,
    keyStart: number,
    keyEnd: number,
    valueStart: number,
    valueEnd: number,
  ): string | undefined {
    if (this.keyed) return this.deferred.match(bytes, keyStart, keyEnd, view);
    if (this.deferred.mayMatch(bytes, keyStart, keyEnd)) {
      const at = this.pendingCount;
      const pending = this.pending;
      pending[at] = keyStart;
      pending[at + 1] = keyEnd;
      pending[at + 2] = valueStart;
      pending[at + 3] = valueEnd;
      this.pendingCount = at + 4;
    }
    return undefined;
  }
}
