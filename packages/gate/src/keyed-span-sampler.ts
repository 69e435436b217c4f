import type { Attributes, Context, Link, SpanKind, TraceState } from '@opentelemetry/api';
import { invalidConfig, nonEmptyStringAt, objectAt } from './config-check.ts';
import { IDEMPOTENCY_ATTRIBUTES } from './span-decision.ts';

/**
 * The OpenTelemetry JS SDK's `Sampler` and `SamplingResult`, by shape, so that the gate depends
 * on the API only; `decision` is the SDK's `SamplingDecision` (0 NOT_RECORD, 1 RECORD,
 * 2 RECORD_AND_SAMPLED).
 */
export interface SamplingResult {
  readonly decision: 0 | 1 | 2;
  readonly attributes?: Readonly<Attributes>;
  readonly traceState?: TraceState;
}

export interface Sampler {
  shouldSample(
    context: Context,
    traceId: string,
    spanName: string,
    spanKind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult;
  toString(): string;
}

const RECORD_AND_SAMPLED = 2;

/**
 * Where keyscope reads the key by default (packages/attempts/README.md, "The mapping"): the gate's
 * attribute, then the request header as HTTP instrumentations capture it.
 */
export const DEFAULT_KEY_ATTRIBUTES: readonly string[] = [
  IDEMPOTENCY_ATTRIBUTES.key,
  'http.request.header.idempotency-key',
];

export interface KeyedSpanSamplerOptions {
  /** Decides every span that carries no key at its start, e.g. `ParentBased(TraceIdRatio(0.01))`. */
  readonly otherwise: Sampler;
  /** The attributes that carry the key; default `DEFAULT_KEY_ATTRIBUTES`. List keyscope's mapping's `key` names. */
  readonly keyAttributes?: readonly string[];
}

/**
 * Records and samples every span that carries an idempotency key when it starts, whatever its
 * parent's decision, and leaves every other span to `otherwise`. keyscope needs every attempt of
 * a key: a duplicate whose second execution was sampled away is a duplicate nobody sees.
 *
 * A sampler sees only the attributes a span starts with. The key must be there: the HTTP
 * instrumentation's `startIncomingSpanHook` and `startOutgoingSpanHook` (with `keyAttributesOf`),
 * or a server span's captured request headers, which the HTTP instrumentation sets at start. A
 * key set on the span later (`span.setAttribute`) comes too late to change the decision, and a
 * span that was not recorded cannot take the gate's decision either. A sampled keyed span makes
 * its children sampled too, through `ParentBased`.
 */
export function createKeyedSpanSampler(options: KeyedSpanSamplerOptions): Sampler {
  const checked = objectAt(options, 'keyedSpanSampler', ['otherwise', 'keyAttributes']);
  const otherwise = checked.otherwise as Sampler;
  if (typeof otherwise?.shouldSample !== 'function') {
    throw invalidConfig('keyedSpanSampler.otherwise', 'a sampler (an object with shouldSample)', otherwise);
  }
  const keyAttributes = checkNames(checked.keyAttributes ?? DEFAULT_KEY_ATTRIBUTES);
  const description = `KeyedSpanSampler{keyAttributes=[${keyAttributes.join(', ')}], otherwise=${String(otherwise)}}`;

  return Object.freeze({
    shouldSample(context, traceId, spanName, spanKind, attributes, links) {
      for (const name of keyAttributes) {
        if (isKey(attributes[name])) return { decision: RECORD_AND_SAMPLED };
      }
      return otherwise.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    },
    toString: () => description,
  } satisfies Sampler);
}

function checkNames(value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw invalidConfig('keyedSpanSampler.keyAttributes', 'a non-empty list of attribute names', value);
  }
  return Object.freeze(
    value.map((name, index) => nonEmptyStringAt(name, `keyedSpanSampler.keyAttributes[${index}]`)),
  );
}

/** A key as keyscope reads it: a non-empty string, or a list (captured headers) whose first entry is one. */
function isKey(value: unknown): boolean {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' && first !== '';
}
