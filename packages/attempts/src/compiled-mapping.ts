import type { Attributes, AttributeValue, Resource } from '@keyscope/otlp';
import type { Placement, ScopeLevel } from './attempt.ts';
import type { Mapping, MappingField } from './mapping.ts';
import { collapseOperationIds } from './operation-ids.ts';
import { derivedStoreId } from './store-id.ts';

/**
 * The mapping resolved for the hot path: name lists pulled out of the frozen config once, and one
 * `ResourceView` per distinct resource object, so that per span the extractor only does property
 * lookups on the span's attributes.
 */
type SpanField = Exclude<MappingField, 'service' | 'node' | 'cluster' | 'region' | 'zone'>;
const SPAN_FIELDS: readonly SpanField[] = [
  'key',
  'outcome',
  'hit',
  'store',
  'scope',
  'tenant',
  'operation',
  'resendCount',
  'statusCode',
  'serverAddress',
  'serverPort',
  'peerAddress',
  'errorType',
  'replayed',
  'effect',
  'released',
  'businessId',
  'method',
];

/** The resource's values for one field's names, index-aligned with the names. */
type ResourceValues = readonly (AttributeValue | undefined)[];

export interface ResourceView {
  /** Shared by every attempt from this resource; frozen. */
  readonly placement: Placement;
  /** Equal for two resources with equal placements: activity merges on it. */
  readonly placementKey: string;
  /** UTF-8 bytes of the placement's longest name, for the limits' `maxNameBytes` (span-limits.ts). */
  readonly placementNameBytes: number;
  /** Per field: null when the resource carries none of the field's names (the usual case). */
  readonly fields: Readonly<Record<SpanField, ResourceValues | null>>;
  /** Derived store ids for every scope but `tenant`, whose id depends on the span's tenant. */
  readonly storeByScope: Readonly<Record<Exclude<ScopeLevel, 'tenant'> | '', string>>;
}

export interface CompiledMapping {
  readonly names: Readonly<Record<SpanField, readonly string[]>>;
  readonly inferOutcomeFromHttp: boolean;
  readonly activityBucketMillis: number;
  /** `sideEffectSpans` as a set; null when the mapping names none (the usual case). */
  readonly sideEffectSpans: ReadonlySet<string> | null;
  /** The key scope the mapping declares for a service's operation (`scopes`); '' when none. */
  declaredScope(service: string, operation: string): ScopeLevel | '';
  /** The operation as attempts carry it: its ids collapsed, unless the mapping turns that off. */
  operation(named: string): string;
  view(resource: Resource): ResourceView;
}

const compiled = new WeakMap<Mapping, CompiledMapping>();

/** Memoized by mapping identity: a mapping is frozen, so its compiled form never goes stale. */
export function compileMapping(mapping: Mapping): CompiledMapping {
  let result = compiled.get(mapping);
  if (result === undefined) {
    result = createCompiledMapping(mapping);
    compiled.set(mapping, result);
  }
  return result;
}

function createCompiledMapping(mapping: Mapping): CompiledMapping {
  const names = {} as Record<SpanField, readonly string[]>;
  for (const field of SPAN_FIELDS) names[field] = mapping.fields[field];
  const views = new WeakMap<Resource, ResourceView>();
  // Spans of one ResourceSpans arrive together, so the last resource answers almost every lookup.
  let lastResource: Resource | undefined;
  let lastView: ResourceView | undefined;
  // Service and operation → scope; service and '' → the service's scope. Null without `scopes`.
  const declared =
    mapping.scopes.length === 0
      ? null
      : new Map(
          mapping.scopes.map((entry) => [`${entry.service}\u0000${entry.operation ?? ''}`, entry.scope]),
        );
  const idPatterns = mapping.operationIdPatterns.map((pattern) => new RegExp(`^(?:${pattern})$`, 'u'));
  return {
    names,
    operation: mapping.collapseOperationIds
      ? (named) => collapseOperationIds(named, idPatterns)
      : (named) => named,
    inferOutcomeFromHttp: mapping.inferOutcomeFromHttp,
    activityBucketMillis: mapping.activityBucketMillis,
    sideEffectSpans: mapping.sideEffectSpans.length === 0 ? null : new Set(mapping.sideEffectSpans),
    declaredScope(service, operation) {
      if (declared === null) return '';
      return declared.get(`${service}\u0000${operation}`) ?? declared.get(`${service}\u0000`) ?? '';
    },
    view(resource) {
      if (resource === lastResource) return lastView!;
      let view = views.get(resource);
      if (view === undefined) {
        view = createResourceView(resource.attributes, mapping);
        views.set(resource, view);
      }
      lastResource = resource;
      lastView = view;
      return view;
    },
  };
}

function createResourceView(attributes: Attributes, mapping: Mapping): ResourceView {
  const placement: Placement = Object.freeze({
    service: readText(attributes, mapping.fields.service, null) ?? '',
    node: readText(attributes, mapping.fields.node, null) ?? '',
    cluster: readText(attributes, mapping.fields.cluster, null) ?? '',
    region: readText(attributes, mapping.fields.region, null) ?? '',
    zone: readText(attributes, mapping.fields.zone, null) ?? '',
  });
  const fields = {} as Record<SpanField, ResourceValues | null>;
  for (const field of SPAN_FIELDS) {
    const values = mapping.fields[field].map((name) => attributes[name]);
    fields[field] = values.some((value) => value !== undefined) ? values : null;
  }
  return {
    placement,
    placementKey: [
      placement.service,
      placement.node,
      placement.cluster,
      placement.region,
      placement.zone,
    ].join('\u0000'),
    placementNameBytes: Math.max(
      ...[placement.service, placement.node, placement.cluster, placement.region, placement.zone].map(
        (name) => Buffer.byteLength(name, 'utf8'),
      ),
    ),
    fields,
    storeByScope: {
      node: derivedStoreId(placement, 'node', ''),
      cluster: derivedStoreId(placement, 'cluster', ''),
      region: derivedStoreId(placement, 'region', ''),
      global: derivedStoreId(placement, 'global', ''),
      '': derivedStoreId(placement, '', ''),
    },
  };
}

/**
 * The first usable text among `names`, each tried on the span's attributes and then the resource's.
 * Strings count when non-empty, numbers are written in decimal, and a string array (how HTTP
 * instrumentations capture headers) contributes its first element. Anything else is skipped.
 */
export function readText(
  attributes: Attributes,
  names: readonly string[],
  fromResource: ResourceValues | null,
): string | undefined {
  for (let i = 0; i < names.length; i++) {
    const text = asText(attributes[names[i]!]);
    if (text !== undefined) return text;
    if (fromResource !== null) {
      const resourceText = asText(fromResource[i]);
      if (resourceText !== undefined) return resourceText;
    }
  }
  return undefined;
}

/** The first present value (not absent, not an empty AnyValue), uninterpreted. */
export function readValue(
  attributes: Attributes,
  names: readonly string[],
  fromResource: ResourceValues | null,
): AttributeValue | undefined {
  for (let i = 0; i < names.length; i++) {
    const value = attributes[names[i]!];
    if (value !== undefined && value !== null) return value;
    if (fromResource !== null) {
      const resourceValue = fromResource[i];
      if (resourceValue !== undefined && resourceValue !== null) return resourceValue;
    }
  }
  return undefined;
}

/** The first numeric value (number, or an int the decoder kept as bigint). */
export function readNumber(
  attributes: Attributes,
  names: readonly string[],
  fromResource: ResourceValues | null,
): number | undefined {
  for (let i = 0; i < names.length; i++) {
    const number = asNumber(attributes[names[i]!]);
    if (number !== undefined) return number;
    if (fromResource !== null) {
      const resourceNumber = asNumber(fromResource[i]);
      if (resourceNumber !== undefined) return resourceNumber;
    }
  }
  return undefined;
}

function asText(value: AttributeValue | undefined): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) {
    const first = value[0];
    if (typeof first === 'string') return first === '' ? undefined : first;
    if (typeof first === 'number' || typeof first === 'bigint') return String(first);
  }
  return undefined;
}

function asNumber(value: AttributeValue | undefined): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'bigint') return Number(value);
  return undefined;
}
