/**
 * Mutation attempts: what the attempts stage hands to the detector. One span becomes at most one
 * attempt; spans that carry no idempotency key become none (they only feed `NodeActivity`).
 */

/** What a dedup store answered. `miss` means the key was admitted and the mutation executed. */
export type Outcome = 'miss' | 'hit' | 'in_progress' | 'mismatch' | 'error';
export const OUTCOMES: readonly Outcome[] = ['miss', 'hit', 'in_progress', 'mismatch', 'error'];

/**
 * What happened to the side effect of an admitted request, as the service states it
 * (`idempotency.effect`): `committed` (it took place: a charge, a write), `none` (the request
 * failed before it), `unknown` (the service cannot tell, e.g. a call to the processor timed out).
 */
export type Effect = 'committed' | 'none' | 'unknown';
export const EFFECTS: readonly Effect[] = ['committed', 'none', 'unknown'];

/** Key scope levels, narrowest first. `tenant` is a namespace, not a placement level. */
export type ScopeLevel = 'node' | 'cluster' | 'region' | 'tenant' | 'global';
export const SCOPE_LEVELS: readonly ScopeLevel[] = ['node', 'cluster', 'region', 'tenant', 'global'];

/** Where a span was emitted, from resource attributes. '' when the sender did not say. */
export interface Placement {
  service: string;
  /** `service.instance.id`, else `host.name`. */
  node: string;
  cluster: string;
  region: string;
  zone: string;
}

interface AttemptBase {
  /** The idempotency key as the client sent it. */
  key: string;
  /** '' when unknown. */
  tenant: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** Unix epoch milliseconds (fractional). */
  startUnixMillis: number;
  endUnixMillis: number;
  placement: Placement;
  /** `http.route`, else the span name. With `placement.service` it names the dedup tier. */
  operation: string;
}

/**
 * How the span's request ended (and which mutation it was), read for every server attempt and
 * arrival: with the decision on a child span of the SERVER span, the detector reads the request's
 * end from the arrival that the SERVER span is (same trace, its span id the decision's parent).
 */
interface RequestResult {
  /** `http.response.status_code`; 0 when the span has none. */
  statusCode: number;
  /** The span's status is ERROR, or its HTTP status is 5xx. */
  failed: boolean;
  /** `idempotency.effect`; '' when the span does not state it. */
  effect: Effect | '';
  /** `idempotency.released` is true: the service gave the key back, so a retry executes. */
  released: boolean;
  /**
   * The mutation's business identifier (`payment.id`), from the mapping's `businessId` field;
   * '' when the span carries none or the mapping names no attribute for it.
   */
  businessId: string;
  /**
   * The request's HTTP method (`http.request.method`, else the older `http.method`): with the
   * route, the endpoint a title names. '' when the span has none; `_OTHER` for a method outside
   * `HTTP_METHODS`, as OpenTelemetry's HTTP conventions spell it.
   */
  method: HttpMethod | '';
}

/** HTTP methods as OpenTelemetry's HTTP conventions list them, and `_OTHER` for any other. */
export const HTTP_METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'CONNECT',
  'TRACE',
  '_OTHER',
] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** A server-side span in which a dedup store was consulted. */
export interface ServerAttempt extends AttemptBase, RequestResult {
  kind: 'server';
  outcome: Outcome;
  /** Id of the dedup store instance (given, or derived from the declared scope and placement). */
  store: string;
  /** Declared key scope, or '' when the span did not declare one. */
  scope: ScopeLevel | '';
  /**
   * The mapping it was extracted under names the side-effect spans (`sideEffectSpans`): an
   * effect that committed under this attempt leaves one, so none under a failed request means
   * the effect did not commit. Carried on the attempt so that the judgement needs only evidence.
   */
  effectSpansDeclared: boolean;
  /**
   * 'http' when the span recorded no outcome and extraction read it from the HTTP response
   * (`inferOutcomeFromHttp`: the status and the captured `Idempotent-Replayed` header). Such a
   * `miss` may be a replay whose header the HTTP instrumentation did not capture (see
   * replay-header.ts in the detector). Absent when the span recorded its outcome.
   */
  outcomeFrom?: 'http';
}

/** A server span carrying the key without an outcome: evidence of where a request landed. */
export interface Arrival extends AttemptBase, RequestResult {
  kind: 'arrival';
}

/**
 * A span that carries the key and whose name the mapping declares as the side effect
 * (`sideEffectSpans`, e.g. `ledger.charge`): the effect took place under the attempt it descends
 * from, unless the span failed. `operation` is the span's name.
 */
export interface SideEffect extends AttemptBase {
  kind: 'effect';
  /** The span's status is ERROR: the effect was tried, and whether it took place is unknown. */
  failed: boolean;
}

/** A CLIENT span carrying the key: one send of the request by a client (or a retry of it). */
export interface ClientAttempt extends AttemptBase {
  kind: 'client';
  /** `http.request.resend_count`; 0 for the first send. */
  resendCount: number;
  /** `server.address[:server.port]`, else `network.peer.address`; '' when unknown. */
  target: string;
  /** `http.response.status_code`, 0 when there was no response. */
  statusCode: number;
  /** `error.type`, else the status message of an ERROR span; '' on success. */
  error: string;
  /**
   * 'child' when the span carried no key and was given the key (and tenant) of a server span
   * naming it as its parent (`SendLinker`): HTTP client instrumentation records the key header
   * only once a response arrives, so a send that timed out is keyless. Absent when the span
   * carried the key itself.
   */
  keyFrom?: 'child';
}

/**
 * A CLIENT span without a key, as extraction reads it for `SendLinker`: a client attempt but for
 * the key and tenant, which the linker takes from a server span naming it as its parent. Only a
 * send that failed (status ERROR: a timeout, a reset, a 5xx) is one: the key goes unrecorded when
 * no response arrived, while a keyless span that got its answer is another call (a query, a GET),
 * and those, most CLIENT spans, would only cost decoding and fill the linker.
 */
export type KeylessSend = Omit<ClientAttempt, 'key' | 'tenant' | 'keyFrom'>;

export type Attempt = ServerAttempt | Arrival | ClientAttempt | SideEffect;

/**
 * Traffic seen per placement and time bucket, from every SERVER span (with a key or not): the
 * detector infers routing events (a node going silent, an error spike, traffic moving) from it.
 */
export interface NodeActivity {
  placement: Placement;
  /** Start of the bucket, Unix epoch milliseconds, a multiple of `bucketMillis`. */
  bucketStartUnixMillis: number;
  bucketMillis: number;
  spans: number;
  errors: number;
  /**
   * The spans by duration (end − start), a histogram over `LATENCY_BOUNDS_MILLIS`: counts that add
   * up bucket by bucket like `spans`. Absent when durations were not counted (activity written
   * before keyscope counted them): such a sample says nothing about latency.
   */
  latency?: number[];
}

export interface ExtractedAttempts {
  attempts: Attempt[];
  activity: NodeActivity[];
  /** Attribute values outside their closed list or of the wrong type, counted by attribute. */
  invalid: InvalidValueCounts;
  /**
   * The CLIENT spans without a key but with ids, for a `SendLinker`; `extractAttempts` always
   * sets it (empty under decode options that leave such spans without ids), a merged or
   * stored batch has none.
   */
  keylessSends?: KeylessSend[];
}

/**
 * Why an attribute value was refused. `outcome` and `hit` make the span no attempt at all (a store
 * decision we cannot read must not be guessed); `scope` keeps the attempt with scope ''.
 * (`idempotency.effect` outside its list reads as `unknown`, which is what an unreadable statement
 * about the effect is: nothing is refused.)
 */
export type InvalidValueReason = 'outcome' | 'hit' | 'scope';
export const INVALID_VALUE_REASONS: readonly InvalidValueReason[] = ['outcome', 'hit', 'scope'];
export type InvalidValueCounts = Record<InvalidValueReason, number>;
