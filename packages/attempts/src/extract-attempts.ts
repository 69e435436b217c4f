import { type Span, SpanKind, StatusCode } from '@keyscope/otlp';
import { type ActivityCounter, createActivityCounter } from './activity-counter.ts';
import {
  type Arrival,
  type Attempt,
  type ClientAttempt,
  EFFECTS,
  type Effect,
  type ExtractedAttempts,
  HTTP_METHODS,
  type HttpMethod,
  type InvalidValueCounts,
  type KeylessSend,
  OUTCOMES,
  type Outcome,
  SCOPE_LEVELS,
  type ScopeLevel,
  type ServerAttempt,
  type SideEffect,
} from './attempt.ts';
import {
  createArrival,
  createClientAttempt,
  createKeylessSend,
  createServerAttempt,
  createSideEffect,
} from './attempt-schema.ts';
import {
  type CompiledMapping,
  compileMapping,
  type ResourceView,
  readNumber,
  readText,
  readValue,
} from './compiled-mapping.ts';
import { SPAN_KEY_TOO_LONG, SPAN_NAME_TOO_LONG } from './errors.ts';
import type { Mapping } from './mapping.ts';
import {
  type CheckedAttempts,
  createSpanRefusals,
  exceedsBytes,
  limitAttempt,
  limitSend,
  refuseSpan,
  type SpanLimits,
  type SpanRefusals,
  timeRefusal,
  timeRefusalDetail,
  tooLong,
} from './span-limits.ts';
import { derivedStoreId } from './store-id.ts';

const OUTCOME_SET: ReadonlySet<string> = new Set(OUTCOMES);
const SCOPE_SET: ReadonlySet<string> = new Set(SCOPE_LEVELS);
const EFFECT_SET: ReadonlySet<string> = new Set(EFFECTS);
const METHOD_SET: ReadonlySet<string> = new Set(HTTP_METHODS.filter((method) => method !== '_OTHER'));
/** An outcome or hit value outside its closed list: the span is no attempt. */
const REFUSED = Symbol('refused');

/**
 * Turns decoded spans into mutation attempts, per span:
 *
 * - no key: nothing, except that a SERVER span still counts into `activity`, and a CLIENT span
 *   with ids and an ERROR status is a `KeylessSend` (in `keylessSends`), for `SendLinker` to
 *   give it a key;
 * - CLIENT with a key: a `ClientAttempt` (an outcome attribute on a client span is ignored: the
 *   client's view is not the store's decision);
 * - SERVER, INTERNAL, UNSPECIFIED, PRODUCER or CONSUMER with a key and an outcome (recorded,
 *   from the `hit` boolean, or, on SERVER spans only, inferred from HTTP): a `ServerAttempt` —
 *   the dedup decision is often recorded on an internal child span, or in a queue consumer;
 * - SERVER with a key and no outcome: an `Arrival`; other kinds without an outcome: nothing;
 * - any kind with a key, no outcome, and a name the mapping declares in `sideEffectSpans`: a
 *   `SideEffect` (before the rules above: a CLIENT span that makes the charge is the charge);
 * - an outcome or hit value outside its closed list: nothing, counted in `invalid`.
 *
 * Server attempts and arrivals carry how their request ended (HTTP status, ERROR status, the
 * stated effect and release), so the detector can tell an admitted request that failed from an
 * execution.
 *
 * A redelivered span gives its attempt again: the detector's attempt log refuses it by (trace id,
 * span id), exactly and for as long as it keeps the key's attempts.
 *
 * With `limits`, spans outside its time window or with names or keys over its sizes are refused
 * (no attempt, no activity) and counted in `refusals`, and over-long free text is cut: see
 * span-limits.ts.
 *
 * Never throws on span content. `spans` is only read.
 */
export function extractAttempts(spans: readonly Span[], mapping: Mapping): ExtractedAttempts;
export function extractAttempts(
  spans: readonly Span[],
  mapping: Mapping,
  limits: SpanLimits,
): CheckedAttempts;
export function extractAttempts(
  spans: readonly Span[],
  mapping: Mapping,
  limits?: SpanLimits,
): ExtractedAttempts | CheckedAttempts {
  const compiled = compileMapping(mapping);
  const names = compiled.names;
  const attempts: Attempt[] = [];
  const activity = createActivityCounter(compiled.activityBucketMillis);
  const invalid: InvalidValueCounts = { outcome: 0, hit: 0, scope: 0 };
  const keylessSends: KeylessSend[] = [];
  const refusals = limits === undefined ? null : createSpanRefusals();
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i]!;
    const view = compiled.view(span.resource);
    if (refusals !== null) {
      const code = timeRefusal(span, limits!);
      if (code !== null) {
        refuseSpan(refusals, code, span, () => timeRefusalDetail(code, span, limits!));
        continue;
      }
      if (view.placementNameBytes > limits!.maxNameBytes) {
        refuseSpan(refusals, SPAN_NAME_TOO_LONG, span, () => placementDetail(view, limits!.maxNameBytes));
        continue;
      }
    }
    const attributes = span.attributes;
    const fromResource = view.fields;
    const server = span.kind === SpanKind.SERVER;
    // No ids: the decoder found no key attribute under the mapping's keyed selection (see
    // KeyedAttributeSelection), so there is none to read, and a span without ids is no attempt.
    // Four spans in five in the bench's workload. (Failed CLIENT spans without a key keep their
    // ids: `failedKinds`.)
    const key = span.traceId === '' ? undefined : readText(attributes, names.key, fromResource.key);

    if (key === undefined) {
      if (server) countActivity(activity, span, compiled, view);
      else if (span.kind === SpanKind.CLIENT && span.traceId !== '') {
        const send = keylessSend(span, compiled, view);
        if (send !== null) {
          if (limits !== undefined) limitSend(send, limits);
          keylessSends.push(send);
        }
      }
      continue;
    }

    if (refusals !== null && exceedsBytes(key, limits!.maxKeyBytes)) {
      refuseSpan(refusals, SPAN_KEY_TOO_LONG, span, () =>
        tooLong('the idempotency key', key, limits!.maxKeyBytes),
      );
      continue;
    }

    if (compiled.sideEffectSpans?.has(span.name) === true && !recordsDecision(span, compiled, view)) {
      const effect = sideEffect(span, key, compiled, view);
      if (refusals !== null && !admitted(effect, span, view, compiled, limits!, refusals)) continue;
      if (server) countActivity(activity, span, compiled, view);
      attempts.push(effect);
      continue;
    }

    if (span.kind === SpanKind.CLIENT) {
      const attempt = clientAttempt(span, key, compiled, view);
      if (refusals === null || admitted(attempt, span, view, compiled, limits!, refusals)) {
        attempts.push(attempt);
      }
      continue;
    }

    const outcome = outcomeOf(span, server, compiled, view, invalid);
    if (outcome === REFUSED || (outcome === undefined && !server)) {
      if (server) countActivity(activity, span, compiled, view);
      continue;
    }
    const statusCode = readNumber(attributes, names.statusCode, fromResource.statusCode) ?? 0;
    const failed = span.status.code === StatusCode.ERROR || statusCode >= 500;

    let attempt: Attempt;
    if (outcome === undefined) attempt = arrival(span, key, statusCode, failed, compiled, view);
    else {
      let scope: ScopeLevel | '' = '';
      const declared = readValue(attributes, names.scope, fromResource.scope);
      if (declared !== undefined) {
        if (typeof declared === 'string' && SCOPE_SET.has(declared)) scope = declared as ScopeLevel;
        else invalid.scope++;
      }
      attempt = serverAttempt(span, key, outcome, scope, statusCode, failed, compiled, view);
    }
    if (refusals !== null && !admitted(attempt, span, view, compiled, limits!, refusals)) continue;
    if (server) activity.count(view, span.startTimeUnixMillis, span.endTimeUnixMillis, failed);
    attempts.push(attempt);
  }

  const extracted = { attempts, activity: activity.activity, invalid, keylessSends };
  return refusals === null ? extracted : { ...extracted, refusals };
}

/** Whether `attempt` passes the limits (cutting what it may cut); counts its span when it does not. */
function admitted(
  attempt: Attempt,
  span: Span,
  view: ResourceView,
  compiled: CompiledMapping,
  limits: SpanLimits,
  refusals: SpanRefusals,
): boolean {
  let detail = limitAttempt(attempt, limits, refusals);
  if (
    detail === null &&
    attempt.kind === 'server' &&
    exceedsBytes(attempt.store, limits.maxNameBytes) &&
    readText(span.attributes, compiled.names.store, view.fields.store) !== undefined
  ) {
    detail = tooLong('the store', attempt.store, limits.maxNameBytes);
  }
  if (detail === null) return true;
  refuseSpan(refusals, SPAN_NAME_TOO_LONG, span, () => detail);
  return false;
}

function placementDetail(view: ResourceView, maxBytes: number): string {
  const placement = view.placement;
  for (const field of ['service', 'node', 'cluster', 'region', 'zone'] as const) {
    if (exceedsBytes(placement[field], maxBytes))
      return tooLong(`the ${field} name`, placement[field], maxBytes);
  }
  return '';
}

/** The recorded outcome, else the `hit` boolean, else (SERVER spans, when enabled) the inferred one. */
function outcomeOf(
  span: Span,
  server: boolean,
  compiled: CompiledMapping,
  view: ResourceView,
  invalid: InvalidValueCounts,
): Outcome | undefined | typeof REFUSED {
  const recorded = readValue(span.attributes, compiled.names.outcome, view.fields.outcome);
  if (recorded !== undefined) {
    if (typeof recorded === 'string' && OUTCOME_SET.has(recorded)) return recorded as Outcome;
    invalid.outcome++;
    return REFUSED;
  }
  const hit = readValue(span.attributes, compiled.names.hit, view.fields.hit);
  if (hit !== undefined) {
    if (typeof hit === 'boolean') return hit ? 'hit' : 'miss';
    invalid.hit++;
    return REFUSED;
  }
  return server && compiled.inferOutcomeFromHttp ? inferredOutcome(span, compiled, view) : undefined;
}

/** Whether `outcomeOf` read the span's outcome from its HTTP response: a SERVER span that recorded none. */
function outcomeInferred(span: Span, compiled: CompiledMapping, view: ResourceView): boolean {
  return (
    compiled.inferOutcomeFromHttp && span.kind === SpanKind.SERVER && !recordsDecision(span, compiled, view)
  );
}

/** Whether a span records a store decision (an outcome or the hit boolean, readable or not). */
function recordsDecision(span: Span, compiled: CompiledMapping, view: ResourceView): boolean {
  return (
    readValue(span.attributes, compiled.names.outcome, view.fields.outcome) !== undefined ||
    readValue(span.attributes, compiled.names.hit, view.fields.hit) !== undefined
  );
}

/** `idempotency.effect`: '' when absent; a value outside the list says nothing either way. */
function effectOf(span: Span, compiled: CompiledMapping, view: ResourceView): Effect | '' {
  const stated = readValue(span.attributes, compiled.names.effect, view.fields.effect);
  if (stated === undefined) return '';
  return typeof stated === 'string' && EFFECT_SET.has(stated) ? (stated as Effect) : 'unknown';
}

/** `idempotency.released`: the boolean true, or the string `true` (a header or a log field). */
function releasedOf(span: Span, compiled: CompiledMapping, view: ResourceView): boolean {
  const released = readValue(span.attributes, compiled.names.released, view.fields.released);
  return released === true || (typeof released === 'string' && released.trim().toLowerCase() === 'true');
}

/** A SERVER span's part in its node's activity: its start, its duration, and whether it failed. */
function countActivity(
  activity: ActivityCounter,
  span: Span,
  compiled: CompiledMapping,
  view: ResourceView,
): void {
  activity.count(view, span.startTimeUnixMillis, span.endTimeUnixMillis, isServerError(span, compiled, view));
}

function isServerError(span: Span, compiled: CompiledMapping, view: ResourceView): boolean {
  if (span.status.code === StatusCode.ERROR) return true;
  const status = readNumber(span.attributes, compiled.names.statusCode, view.fields.statusCode);
  return status !== undefined && status >= 500;
}

/**
 * Reads the response the way an idempotency layer answers (the IETF Idempotency-Key draft and
 * common implementations): a replay is marked by `Idempotent-Replayed: true`, a concurrent attempt
 * is refused with 409, a payload mismatch with 422; any other 2xx is a first execution. Anything
 * else (no status, 4xx/5xx) says nothing about the store, so the span stays an arrival.
 */
function inferredOutcome(span: Span, compiled: CompiledMapping, view: ResourceView): Outcome | undefined {
  const replayed = readText(span.attributes, compiled.names.replayed, view.fields.replayed);
  if (replayed !== undefined && replayed.trim().toLowerCase() === 'true') return 'hit';
  const status = readNumber(span.attributes, compiled.names.statusCode, view.fields.statusCode);
  if (status === 409) return 'in_progress';
  if (status === 422) return 'mismatch';
  if (status !== undefined && status >= 200 && status < 300) return 'miss';
  return undefined;
}

function tenantOf(span: Span, compiled: CompiledMapping, view: ResourceView): string {
  return readText(span.attributes, compiled.names.tenant, view.fields.tenant) ?? '';
}

function businessIdOf(span: Span, compiled: CompiledMapping, view: ResourceView): string {
  return readText(span.attributes, compiled.names.businessId, view.fields.businessId) ?? '';
}

/** `http.route` (or what the mapping names), else the span's name; a URL path's ids collapsed. */
function operationOf(span: Span, compiled: CompiledMapping, view: ResourceView): string {
  return compiled.operation(
    readText(span.attributes, compiled.names.operation, view.fields.operation) ?? span.name,
  );
}

function serverAttempt(
  span: Span,
  key: string,
  outcome: Outcome,
  scope: ScopeLevel | '',
  statusCode: number,
  failed: boolean,
  compiled: CompiledMapping,
  view: ResourceView,
): ServerAttempt {
  const tenant = tenantOf(span, compiled, view);
  const operation = operationOf(span, compiled, view);
  const stated = readText(span.attributes, compiled.names.store, view.fields.store);
  // Neither a store nor a scope on the span: the scope the mapping declares for it, if any.
  const keyScope =
    stated === undefined && scope === '' ? compiled.declaredScope(view.placement.service, operation) : scope;
  const store =
    stated ??
    (keyScope === 'tenant' ? derivedStoreId(view.placement, keyScope, tenant) : view.storeByScope[keyScope]);
  return createServerAttempt({
    key,
    tenant,
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    startUnixMillis: span.startTimeUnixMillis,
    endUnixMillis: span.endTimeUnixMillis,
    placement: view.placement,
    operation,
    outcome,
    store,
    scope: keyScope,
    statusCode,
    failed,
    effect: effectOf(span, compiled, view),
    released: releasedOf(span, compiled, view),
    businessId: businessIdOf(span, compiled, view),
    effectSpansDeclared: compiled.sideEffectSpans !== null,
    outcomeFrom: outcomeInferred(span, compiled, view) ? 'http' : undefined,
    method: methodOf(span, compiled, view),
  });
}

function arrival(
  span: Span,
  key: string,
  statusCode: number,
  failed: boolean,
  compiled: CompiledMapping,
  view: ResourceView,
): Arrival {
  return createArrival({
    key,
    tenant: tenantOf(span, compiled, view),
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    startUnixMillis: span.startTimeUnixMillis,
    endUnixMillis: span.endTimeUnixMillis,
    placement: view.placement,
    operation: operationOf(span, compiled, view),
    statusCode,
    failed,
    effect: effectOf(span, compiled, view),
    released: releasedOf(span, compiled, view),
    businessId: businessIdOf(span, compiled, view),
    method: methodOf(span, compiled, view),
  });
}

/** The request's HTTP method, upper-cased; `_OTHER` for one outside the conventions' list. */
function methodOf(span: Span, compiled: CompiledMapping, view: ResourceView): HttpMethod | '' {
  const method = readText(span.attributes, compiled.names.method, view.fields.method);
  if (method === undefined || method === '') return '';
  const upper = method.length <= 7 ? method.toUpperCase() : '';
  return METHOD_SET.has(upper) ? (upper as HttpMethod) : '_OTHER';
}

function sideEffect(span: Span, key: string, compiled: CompiledMapping, view: ResourceView): SideEffect {
  return createSideEffect({
    key,
    tenant: tenantOf(span, compiled, view),
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    startUnixMillis: span.startTimeUnixMillis,
    endUnixMillis: span.endTimeUnixMillis,
    placement: view.placement,
    operation: span.name,
    failed: span.status.code === StatusCode.ERROR,
  });
}

function clientAttempt(
  span: Span,
  key: string,
  compiled: CompiledMapping,
  view: ResourceView,
): ClientAttempt {
  const names = compiled.names;
  const attributes = span.attributes;
  return createClientAttempt({
    key,
    tenant: tenantOf(span, compiled, view),
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    startUnixMillis: span.startTimeUnixMillis,
    endUnixMillis: span.endTimeUnixMillis,
    placement: view.placement,
    operation: operationOf(span, compiled, view),
    resendCount: readNumber(attributes, names.resendCount, view.fields.resendCount) ?? 0,
    target: targetOf(span, compiled, view),
    statusCode: readNumber(attributes, names.statusCode, view.fields.statusCode) ?? 0,
    error: sendErrorOf(span, compiled, view),
  });
}

/** A client attempt but for the key and tenant, when the send failed: see KeylessSend. */
function keylessSend(span: Span, compiled: CompiledMapping, view: ResourceView): KeylessSend | null {
  const names = compiled.names;
  const attributes = span.attributes;
  if (span.status.code !== StatusCode.ERROR) return null;
  return createKeylessSend({
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    startUnixMillis: span.startTimeUnixMillis,
    endUnixMillis: span.endTimeUnixMillis,
    placement: view.placement,
    operation: operationOf(span, compiled, view),
    resendCount: readNumber(attributes, names.resendCount, view.fields.resendCount) ?? 0,
    target: targetOf(span, compiled, view),
    statusCode: readNumber(attributes, names.statusCode, view.fields.statusCode) ?? 0,
    error: sendErrorOf(span, compiled, view),
  });
}

/** `server.address[:server.port]`, else `network.peer.address`, else ''. */
function targetOf(span: Span, compiled: CompiledMapping, view: ResourceView): string {
  const names = compiled.names;
  const attributes = span.attributes;
  const address = readText(attributes, names.serverAddress, view.fields.serverAddress);
  if (address === undefined) return readText(attributes, names.peerAddress, view.fields.peerAddress) ?? '';
  const port = readText(attributes, names.serverPort, view.fields.serverPort);
  return port === undefined ? address : address + ':' + port;
}

/**
 * `error.type`, else the status message of an ERROR span, else ''. An `error.type` that names only
 * a generic class (`Error`, what the Node HTTP instrumentation records for "socket hang up" and for
 * its own timeout alike) says less than the status message, which is taken instead when there is one.
 */
function sendErrorOf(span: Span, compiled: CompiledMapping, view: ResourceView): string {
  const failed = span.status.code === StatusCode.ERROR;
  const type = readText(span.attributes, compiled.names.errorType, view.fields.errorType);
  if (type !== undefined && !(GENERIC_ERROR_TYPES.has(type) && failed && span.status.message !== ''))
    return type;
  return failed ? span.status.message || 'error' : '';
}

/** `error.type` values that name a class, not what went wrong. */
const GENERIC_ERROR_TYPES: ReadonlySet<string> = new Set(['Error', 'error', '_OTHER']);
