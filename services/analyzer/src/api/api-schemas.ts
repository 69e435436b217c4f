import { EFFECTS, HTTP_METHODS, OUTCOMES, SCOPE_LEVELS } from '@keyscope/attempts';
import {
  FINDING_CLASSES,
  RETRY_AFTER,
  ROUTING_EVENT_TYPES,
  SUSPICION_EVIDENCE_KINDS,
} from '@keyscope/detector';

/*
 * The JSON schemas of the API's answers: fastify serializes each route's answer with them (but
 * those holding attempts: route-context.ts, `attemptsSerializer`), and the OpenAPI document
 * (openapi.ts) is built from the same objects, each named one becoming a component. Every object
 * is closed (`additionalProperties: false`): the schema serializer writes only what a schema
 * declares, so a field a presenter (present.ts) adds must be declared here too, or it never reaches
 * a client — test/e2e/api-answers.test.ts checks every answer of a real scenario, and what its
 * handlers returned, against the document.
 */

/** A JSON schema as the routes declare them; the reference page reads the keywords it shows. */
export interface JsonSchema {
  type?: string | readonly string[];
  format?: string;
  description?: string;
  enum?: readonly unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
  properties?: Readonly<Record<string, JsonSchema>>;
  required?: readonly string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  $ref?: string;
}

/** An object whose every property is listed in `required` unless named in `optional`. */
function closed(
  description: string,
  properties: Record<string, JsonSchema>,
  optional: readonly string[] = [],
): JsonSchema {
  return {
    type: 'object',
    description,
    properties,
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    additionalProperties: false,
  };
}

const text = (description: string): JsonSchema => ({ type: 'string', description });
const count = (description: string): JsonSchema => ({ type: 'integer', minimum: 0, description });
const flag = (description: string): JsonSchema => ({ type: 'boolean', description });
const time = (description: string): JsonSchema => ({ type: 'string', format: 'date-time', description });
const choice = (values: readonly unknown[], description: string): JsonSchema => ({
  type: 'string',
  enum: values,
  description,
});
const list = (items: JsonSchema, description: string): JsonSchema => ({ type: 'array', items, description });
const nullable = (schema: JsonSchema, description: string): JsonSchema => ({
  ...schema,
  type: [schema.type as string, 'null'],
  ...(schema.enum === undefined ? {} : { enum: [...schema.enum, null] }),
  description,
});
const ratio = (description: string): JsonSchema => ({
  type: ['number', 'null'],
  minimum: 0,
  maximum: 1,
  description,
});

/** Every refusal's body (error-handler.ts). */
export const ERROR_SCHEMA = closed('A refusal: keyscope error code and a message safe to show.', {
  error: closed('What was refused and why.', {
    code: text('The error code (`KS_API_…`, `KS_STORE_CURSOR_INVALID`), listed in docs/errors.md.'),
    message: text('What was expected and what arrived; parameters are echoed up to 100 characters.'),
  }),
});

export const ROUTING_EVENT_SCHEMA = closed(
  'A routing event keyscope inferred from the traffic of the nodes (docs/design.md, "Routing events").',
  {
    id: text('Stable id of the event.'),
    type: choice(
      ROUTING_EVENT_TYPES,
      '`node_down` (a node went silent), `error_spike`, `latency_spike`, `cluster_failover` or `region_failover` (traffic moved away from a cluster or region).',
    ),
    service: text('The service whose nodes it concerns.'),
    node: text('The node, for node events; empty for cluster and region events.'),
    cluster: text('The cluster of the node or of the failover; empty when the spans name none.'),
    region: text('The region of the node or of the failover; empty when the spans name none.'),
    start: time('Start of the window.'),
    end: time('End of the window: the first bucket the node (or region) served again, or the last observed.'),
    ended: flag('False while the window is still open at the end of what has been observed.'),
    description: text('A sentence a human can check against their dashboards.'),
  },
);

/** Why a finding's or an incident's severity is below its class's. */
const SEVERITY_REASON = nullable(
  choice(['replay_unseen'], ''),
  '`replay_unseen`: executions read from HTTP status alone, one after the other on one node, at a tier where no replay was ever seen (the replay header is probably not captured: docs/instrumenting.md); null when the severity is the class’s.',
);

const SERVER_ONLY = 'Server attempts only.';
const REQUEST_ONLY = 'Server attempts and arrivals only.';

/**
 * One attempt as `presentAttempt` renders it. The four kinds share one object schema rather than
 * a `oneOf`: the serializer then writes each attempt without first validating it against every
 * branch (a finding's page holds thousands), and the fields of one kind only are optional, each
 * description naming its kinds.
 */
export const ATTEMPT_SCHEMA = closed(
  'One span of the key: a store decision (`server`), a request landing without one (`arrival`), a send (`client`) or the side effect (`effect`).',
  {
    kind: choice(
      ['server', 'arrival', 'client', 'effect'],
      '`server`: a dedup store was consulted; `arrival`: a SERVER span carrying the key without a decision; `client`: a CLIENT span sending the key; `effect`: a span the mapping names as the side effect.',
    ),
    key: text('The idempotency key as the client sent it.'),
    tenant: text('The tenant of the key; empty when unknown.'),
    traceId: text('Trace id, 32 hex digits.'),
    spanId: text('Span id, 16 hex digits.'),
    parentSpanId: text('Parent span id; empty for a root span.'),
    operation: text('`http.route`, else the span name (the side effect: its span name).'),
    service: text('`service.name` of the span; empty when the sender did not say.'),
    node: text('`service.instance.id`, else `host.name`; empty when the sender did not say.'),
    cluster: text(
      'The cluster the span was emitted in (a resource attribute); empty when the sender did not say.',
    ),
    region: text(
      'The region the span was emitted in (a resource attribute); empty when the sender did not say.',
    ),
    zone: text('The zone the span was emitted in (a resource attribute); empty when the sender did not say.'),
    start: time('Start of the span.'),
    end: time('End of the span.'),
    durationMillis: { type: 'number', minimum: 0, description: 'end − start, in milliseconds.' },
    outcome: choice(
      OUTCOMES,
      `What the dedup store answered; \`miss\` means the key was admitted and the mutation executed. ${SERVER_ONLY}`,
    ),
    store: text(
      `Id of the dedup store instance (given, or derived from the scope and placement). ${SERVER_ONLY}`,
    ),
    scope: choice(
      [...SCOPE_LEVELS, ''],
      `Declared key scope (\`idempotency.scope\`); empty when the span declared none. ${SERVER_ONLY}`,
    ),
    effectSpansDeclared: flag(
      `The mapping names side-effect spans, so a committed effect under this attempt leaves one. ${SERVER_ONLY}`,
    ),
    statusCode: count(
      '`http.response.status_code`; 0 when the span has none (a send: no response arrived). Server attempts, arrivals and sends.',
    ),
    failed: flag(
      'The span’s status is ERROR, or its HTTP status is 5xx (a side effect: it was tried, and whether it took place is unknown). Server attempts, arrivals and side effects.',
    ),
    effect: choice(
      [...EFFECTS, ''],
      `\`idempotency.effect\`: what happened to the side effect of the request; empty when the span does not state it. ${REQUEST_ONLY}`,
    ),
    released: flag(
      `\`idempotency.released\`: the service gave the key back, so a retry executes. ${REQUEST_ONLY}`,
    ),
    businessId: text(
      `The mutation's business identifier (the mapping's \`businessId\` attribute); empty when there is none. ${REQUEST_ONLY}`,
    ),
    method: choice(
      [...HTTP_METHODS, ''],
      `The request's HTTP method (\`http.request.method\`, else \`http.method\`); \`_OTHER\` for one outside OpenTelemetry's list, empty when the span has none. ${REQUEST_ONLY}`,
    ),
    resendCount: count('`http.request.resend_count`; 0 for the first send. Sends only.'),
    target: text(
      '`server.address[:server.port]`, else `network.peer.address`; empty when unknown. Sends only.',
    ),
    error: text('`error.type`, else the status message of an ERROR span; empty on success. Sends only.'),
    keyFrom: choice(
      ['child'],
      "Present on a send whose span carried no key: `child` means it was given the key (and tenant) of the server span naming it as its parent, since HTTP client instrumentation records the key header only once a response arrives. Absent when the send's span carried the key itself. Sends only.",
    ),
  },
  [
    'outcome',
    'store',
    'scope',
    'effectSpansDeclared',
    'statusCode',
    'failed',
    'effect',
    'released',
    'businessId',
    'method',
    'resendCount',
    'target',
    'error',
    'keyFrom',
  ],
);

const SUSPICION_SCHEMA = nullable(
  closed('', {
    strength: choice(['strong', 'moderate'], 'The strongest of the evidence.'),
    evidence: list(
      closed('One span the suspicion rests on.', {
        kind: choice(
          SUSPICION_EVIDENCE_KINDS,
          'What the span shows: `send_reset`, `send_cut_off`, `send_lost_behind_proxy` (a send with no span of the tier under it, while a node went silent), `unexplained_in_progress` (a 409 with no execution holding the key), `arrival_without_decision`, `failed_after_admission` (docs/design.md).',
        ),
        strength: choice(
          ['strong', 'moderate'],
          '`strong`: the spans leave one likely reading; `moderate`: likely, with another reading open.',
        ),
        traceId: text('Trace of the span it rests on.'),
        spanId: text('The span it rests on: a CLIENT send, a decision, a SERVER span.'),
        at: time('When that span started.'),
        node: text(
          'The node the unseen (or unconfirmed) execution probably ran on; empty when the spans cannot say.',
        ),
        store: text(
          'The store it points at (`unexplained_in_progress`, `failed_after_admission`); empty otherwise.',
        ),
        routingEventId: nullable(
          text(''),
          'The routing event it rests on (the node that went silent); null when none.',
        ),
      }),
      'The evidence in time order, never empty.',
    ),
  }),
  'For a suspected duplicate, what it rests on; null for every other class.',
);

const MILLIS_OR_NULL = (description: string): JsonSchema => ({ type: ['number', 'null'], description });

const FINDING_PROPERTIES: Record<string, JsonSchema> = {
  id: text('Stable id of the finding: one per key and class.'),
  key: text('The idempotency key.'),
  class: choice(
    FINDING_CLASSES,
    'What happened: `cross_store_duplicate`, `same_store_duplicate` (it ran twice), `absorbed_duplicate` (a second execution the store absorbed), `suspected_duplicate` (probably ran twice), `key_collision`, `scope_violation` (docs/design.md).',
  ),
  cause: nullable(
    choice(
      [
        'ttl_expired',
        'race',
        'store_unknown',
        'cross_tenant_replay',
        'shared_key',
        'effect_unknown',
        'execution_unseen',
      ],
      '',
    ),
    'Why, within the class: `ttl_expired`, `race` or `store_unknown` for same-store duplicates; `cross_tenant_replay` or `shared_key` for key collisions; `effect_unknown` or `execution_unseen` for suspected duplicates; null where the class says it all.',
  ),
  severity: choice(
    ['critical', 'high', 'warning'],
    'Severity of the class, or below it for the reason in `severityReason`.',
  ),
  severityReason: SEVERITY_REASON,
  service: text('The dedup tier: the service that executed twice (or whose scope was exceeded).'),
  operation: text('The dedup tier’s operation (`http.route`, else the span name).'),
  tenant: text('First tenant seen for the key; empty when unknown.'),
  tenants: list(text('A tenant.'), 'Every tenant seen for the key.'),
  stores: list(
    text('A dedup store id.'),
    'The dedup stores the key’s attempts at the tier consulted, in the order the key reached them: at most `detector.maxStoresPerFinding`.',
  ),
  nodes: list(
    text('A node.'),
    'The nodes the key’s attempts at the tier landed on, in the order the key reached them: at most `detector.maxStoresPerFinding`.',
  ),
  storesTotal: count('How many stores there are, listed or not.'),
  nodesTotal: count('How many nodes there are, listed or not.'),
  executions: count(
    'Executions (`miss`) at the tier, less the admitted attempts that failed before their effect; a suspected duplicate counts those whose effect is unknown too.',
  ),
  retriedBy: choice(
    ['client', 'proxy', 'unknown'],
    '`proxy` when two landings came from one send, `client` when they came from different sends.',
  ),
  gapMillis: MILLIS_OR_NULL(
    "From the first execution's start to the second's start; null with fewer than two.",
  ),
  idleMillis: MILLIS_OR_NULL(
    "From the first execution's end to the second's start (negative when they overlapped); null with fewer than two or when not recorded.",
  ),
  callerWaitMillis: MILLIS_OR_NULL(
    'How long the caller waited before it gave up: its send before the repeat, when that send timed out; null when it ended otherwise (`retryAfter`) or no send of the key shows one.',
  ),
  method: choice(
    [...HTTP_METHODS, ''],
    "The HTTP method of the requests the tier executed (its first execution's request): with `operation`, the endpoint. Empty when the spans name none.",
  ),
  retryAfter: choice(
    [...RETRY_AFTER],
    "How the caller's send before the repeat ended: `timeout` (no response), `proxy_error` (a proxy's 502 or 504), `reset`, `error_response` (another 5xx), `unknown` (no failed send shows).",
  ),
  firstExecutionMillis: MILLIS_OR_NULL(
    "How long the first execution's request ran; null when there is no execution before the repeat, or its request's SERVER span was lost (`firstExecutionLost`).",
  ),
  firstExecutionClipped: flag(
    "The first execution's request span ended at its caller's disconnect: it ran at least `firstExecutionMillis`, its end unseen.",
  ),
  firstExecutionLost: flag(
    "The first execution's decision span is in the spans and its request's SERVER span is not (it died with its node, or was dropped): its duration is unknown.",
  ),
  outlivedCallerWait: nullable(
    flag(''),
    'The first execution ran longer than its caller waited (or was clipped); null when the wait or the execution is unknown.',
  ),
  routing: closed('How the key’s retry path was broken.', {
    affinityBroken: flag("The key's attempts at the tier landed on two or more nodes."),
    event: nullable(
      ROUTING_EVENT_SCHEMA,
      'The routing event that broke the retry path: one where an earlier attempt of the key landed, overlapping its first attempt to the repeat; null when none.',
    ),
  }),
  incidentId: text('The incident the finding is grouped in.'),
  firstSeen: time("The key's first attempt."),
  lastSeen: time("The key's last attempt."),
  attempts: list(
    ATTEMPT_SCHEMA,
    'Every attempt of the key (sends, arrivals, decisions, side effects), in time order.',
  ),
  attemptsTotal: count('How many attempts the finding holds; `attempts` lists them all here.'),
  suspicion: SUSPICION_SCHEMA,
  evidenceCapped: flag(
    'The key reached `detector.maxAttemptsPerKey`: the attempts are its first ones, and the finding is judged on part of its traffic.',
  ),
};

export const FINDING_SCHEMA = closed(
  'A key that ran twice (or probably did, or broke its scope): its evidence.',
  FINDING_PROPERTIES,
);

/** A finding of an incident's detail, whose `attempts` are its first ones. */
export const FINDING_EXCERPT_SCHEMA = closed(
  "A finding of an incident's detail: its first attempts (100 at most), `attemptsTotal` counting them all.",
  {
    ...FINDING_PROPERTIES,
    attempts: list(
      ATTEMPT_SCHEMA,
      'The first attempts of the key, in time order; the rest in `/api/v1/keys/{key}`.',
    ),
    attemptsTotal: count('How many attempts the finding holds, listed or not.'),
  },
);

const INCIDENT_PROPERTIES: Record<string, JsonSchema> = {
  id: text('Stable id of the incident; alerts link to `/incidents/{id}`.'),
  title: text('One line for a page or a ticket.'),
  service: text('The dedup tier’s service.'),
  operation: text('The dedup tier’s operation.'),
  class: choice(FINDING_CLASSES, 'The class of every finding in it.'),
  severity: choice(
    ['critical', 'high', 'warning'],
    'Severity of the class, or below it for the reason in `severityReason`.',
  ),
  severityReason: SEVERITY_REASON,
  status: choice(['open', 'resolved'], '`resolved` once it gains no key for a while, or by hand.'),
  acknowledged: flag('Someone acknowledged it.'),
  acknowledgedAt: nullable(time(''), 'When it was acknowledged; null when it is not.'),
  acknowledgedBy: nullable(text(''), "The token's name that acknowledged it; null when it is not."),
  resolvedBy: nullable(text(''), "The token's name that resolved it by hand; null otherwise."),
  keys: count('Keys (findings) in it; a tenant’s token counts its own.'),
  stores: list(
    text('A dedup store id.'),
    'Its findings’ stores, in name order: at most `detector.maxStoresPerIncident`.',
  ),
  nodes: list(
    text('A node.'),
    'Its findings’ nodes, in name order: at most `detector.maxStoresPerIncident`.',
  ),
  storesTotal: count('How many stores there are, listed or not.'),
  nodesTotal: count('How many nodes there are, listed or not.'),
  routingEvent: nullable(
    ROUTING_EVENT_SCHEMA,
    'The routing event its findings overlap (one failover, one incident); null when grouped by time.',
  ),
  openedAt: time('When its first key first ran twice.'),
  lastFindingAt: time('When its latest finding was last seen.'),
  resolvedAt: nullable(time(''), 'When it was resolved; null while open.'),
  advice: text('What to check or change, from its findings.'),
  adviceSentences: list(
    text(''),
    'The ids of the advice\'s sentences in order (docs/incidents.md, "The advice, sentence by sentence"): each is said because a fact of the incident\'s keys selects it. `reason_…` first when the severity is lowered.',
  ),
};

export const INCIDENT_SCHEMA = closed(
  'Findings of one cause grouped, so on-call is paged once.',
  INCIDENT_PROPERTIES,
);

export const DELIVERY_SCHEMA = closed('One alert delivery of the incident.', {
  sink: text('The alert sink (`alerts.sinks[].name`).'),
  dedupKey: text('The key the sink deduplicates pages by.'),
  attempts: count('Attempts so far.'),
  delivered: flag('The sink accepted it.'),
  lastError: nullable(text(''), 'Why the last attempt failed; null when none did.'),
});

export const INCIDENT_DETAIL_SCHEMA = closed('One incident with its first findings and its alerts.', {
  ...INCIDENT_PROPERTIES,
  findings: list(
    FINDING_EXCERPT_SCHEMA,
    'Its first 50 findings, newest first, each with its first attempts.',
  ),
  findingsNextCursor: nullable(
    text(''),
    'Where `/api/v1/findings?incident={id}&cursor=` continues; null when `findings` holds them all.',
  ),
  alerts: list(DELIVERY_SCHEMA, "Its alert deliveries; empty for a tenant's token."),
});

const NEXT_CURSOR = nullable(text(''), 'Pass as `cursor` for the next page; null on the last page.');

/** `{ items, nextCursor }`, as every list of the API answers. */
export function pageSchema(description: string, item: JsonSchema): JsonSchema {
  return closed(description, {
    items: list(item, 'This page, in the list’s order.'),
    nextCursor: NEXT_CURSOR,
  });
}

export const FINDINGS_PAGE_SCHEMA = pageSchema('A page of findings, newest first.', FINDING_SCHEMA);
export const INCIDENTS_PAGE_SCHEMA = pageSchema('A page of incidents, newest first.', INCIDENT_SCHEMA);

export const STORED_ROUTING_EVENT_SCHEMA = closed('A routing event and the incidents grouped under it.', {
  ...ROUTING_EVENT_SCHEMA.properties,
  incidentIds: list(text('An incident id.'), 'The incidents grouped under the event, oldest first.'),
});

export const ROUTING_EVENTS_PAGE_SCHEMA = pageSchema(
  'A page of routing events, newest first.',
  STORED_ROUTING_EVENT_SCHEMA,
);

export const KEY_LOOKUP_SCHEMA = closed('Did key X run twice: its attempts and findings.', {
  key: text('The key asked about.'),
  seen: flag('Some attempt of the key is kept; false is no evidence either way.'),
  evidenceSince: nullable(
    time(''),
    'The oldest attempt keyscope still keeps (retention): an older run of the key is not seen; null when none is kept.',
  ),
  executions: count(
    'Executions of the key: admitted attempts (`miss`) but those whose request failed before their effect; a decision recorded as a span and as a log record counts once.',
  ),
  unconfirmedExecutions: count('Admitted attempts whose effect is unknown (a suspected duplicate).'),
  ranTwice: flag('A finding of the key says it ran twice (not a suspicion, scope violation or collision).'),
  attempts: list(ATTEMPT_SCHEMA, 'Every attempt of the key kept, in time order.'),
  findings: list(FINDING_SCHEMA, 'Its findings.'),
});

const SPREAD = choice(
  ['node', 'cluster', 'region', 'global'],
  'The smallest level that would have held every observed retry of every key.',
);
const KEYS_SPANNING = closed(
  'Keys whose requests landed on several places, each counted once at the widest boundary its retries crossed.',
  {
    nodes: count('Keys on two or more nodes, all within one cluster.'),
    clusters: count('Keys on two or more clusters, all within one region.'),
    regions: count('Keys on two or more regions (whatever clusters they crossed too).'),
  },
);

export const COVERAGE_SCHEMA = closed(
  "How complete keyscope's view of the tier is, counted over one key in `keysOneIn` (`detector.coverageKeysOneIn`).",
  {
    keysOneIn: count('One key in this many is counted.'),
    arrivals: count('Requests that reached the tier (SERVER spans carrying a key).'),
    arrivalsWithDecision: count('Of those, requests with a store decision under them.'),
    requests: count('Store decisions.'),
    requestsWithSend: count('Of those, decisions whose send (a CLIENT span) is seen.'),
    keys: count('Keys counted.'),
    keysFullyVisible: count('Of those, keys whose every send reached a decision in the spans.'),
    sends: count('Sends (CLIENT spans) of keys.'),
    sendsWithServerSpan: count('Of those, sends with a SERVER span of the tier under them.'),
    arrivalsWithDecisionRatio: ratio('arrivalsWithDecision / arrivals; null with no arrival.'),
    requestsWithSendRatio: ratio('requestsWithSend / requests; null with no request.'),
    keysFullyVisibleRatio: ratio('keysFullyVisible / keys; null with no key.'),
    sendsWithServerSpanRatio: ratio('sendsWithServerSpan / sends; null with no send.'),
  },
);

const SCOPE_LEVEL_COUNTS: Record<string, JsonSchema> = Object.fromEntries(
  SCOPE_LEVELS.map((level) => [level, count(`Server attempts declaring \`${level}\`.`)]),
);

export const SCOPE_ROW_SCHEMA = closed('A dedup tier: declared key scope vs observed retry scope.', {
  service: text('The tier’s service.'),
  operation: text('The tier’s operation.'),
  declaredScope: choice(
    [...SCOPE_LEVELS, 'unknown'],
    'The scope most server attempts declared; `unknown` if none did.',
  ),
  scopeFrom: choice(
    ['span', 'mapping', 'unknown'],
    '`mapping` when the mapping declares the tier’s scope, `span` when the spans do, `unknown` when nothing does.',
  ),
  declaredCounts: {
    type: 'object',
    description: 'Declarations seen, by level (only the levels seen), for a tier whose instances disagree.',
    properties: SCOPE_LEVEL_COUNTS,
    additionalProperties: false,
  },
  keys: count('Keys seen at the tier.'),
  keysSpanning: KEYS_SPANNING,
  smallestCoveringScope: SPREAD,
  keysAtRisk: count('Keys whose retries reached beyond the declared scope.'),
  status: choice(
    ['sound', 'narrower', 'unknown'],
    '`narrower`: the declared scope is narrower than where retries land; `unknown`: nothing declares it.',
  ),
  coverage: COVERAGE_SCHEMA,
  replayHeader: nullable(
    closed('Whether the tier’s replays show in the spans, where its outcomes are read from HTTP responses.', {
      verdict: choice(
        ['captured', 'missing', 'unconfirmed'],
        '`captured`: a replay was seen; `missing`: `detector.replayHeaderMinRepeats` repeats of a key on one node showed none (the header is most likely not captured); `unconfirmed`: fewer repeats so far.',
      ),
      replays: count('Replays read from the response header.'),
      repeats: count(
        'Repeats of a key on one node after an earlier execution there ended, in the evidence coverage sample.',
      ),
      advice: nullable(text(''), 'The likely cause and its fix, for `missing`; null otherwise.'),
    }),
    'The tier’s replay header; null for a tier with no outcome read from HTTP.',
  ),
  spansSeen: flag(
    'False for a scope the mapping declares for a service that has sent no keyed span (a name that does not match, or not yet traced).',
  ),
});

export const SCOPES_PAGE_SCHEMA = closed('A page of the scope report, in order of service then operation.', {
  items: list(SCOPE_ROW_SCHEMA, 'The tiers of this page.'),
  nextCursor: NEXT_CURSOR,
  overflow: nullable(
    closed('', {
      tiers: count('Distinct tiers summed here (estimated; exact in practice below a few hundred).'),
      keys: count('Keys of those tiers.'),
      keysSpanning: KEYS_SPANNING,
      smallestCoveringScope: SPREAD,
      coverage: COVERAGE_SCHEMA,
    }),
    'The tiers past `detector.maxTiers`, summed; null when there are none (and for a tenant’s token).',
  ),
});

export const HEALTH_SCHEMA = closed('The process is up.', { status: choice(['ok'], 'Always `ok`.') });

export const READY_SCHEMA = closed('Ready to serve.', { status: choice(['ready'], 'Always `ready`.') });

export const NOT_READY_SCHEMA = closed('Not ready, and why.', {
  status: choice(['not ready'], 'Always `not ready`.'),
  reason: text('Why: starting or stopping, or why database writes fail.'),
});

/** The schemas the OpenAPI document names as components, by the name it gives them. */
export const NAMED_SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  Error: ERROR_SCHEMA,
  Attempt: ATTEMPT_SCHEMA,
  RoutingEvent: ROUTING_EVENT_SCHEMA,
  Finding: FINDING_SCHEMA,
  FindingExcerpt: FINDING_EXCERPT_SCHEMA,
  Incident: INCIDENT_SCHEMA,
  IncidentDetail: INCIDENT_DETAIL_SCHEMA,
  AlertDelivery: DELIVERY_SCHEMA,
  RoutingEventListed: STORED_ROUTING_EVENT_SCHEMA,
  KeyLookup: KEY_LOOKUP_SCHEMA,
  ScopeRow: SCOPE_ROW_SCHEMA,
  Coverage: COVERAGE_SCHEMA,
};
