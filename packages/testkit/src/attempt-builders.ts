import {
  type Arrival,
  type ClientAttempt,
  createArrival,
  createClientAttempt,
  createServerAttempt,
  createSideEffect,
  type Effect,
  type HttpMethod,
  type NodeActivity,
  type Outcome,
  type Placement,
  type ScopeLevel,
  type ServerAttempt,
  type SideEffect,
} from '@keyscope/attempts';
import { TEST_EPOCH_UNIX_MILLIS } from '@keyscope/attempts/testing';

/**
 * Readable attempt builders for tests: `server({ key: 'k1', store: 'node-a', node: 'a' })`.
 * Ids default to a counter so every built attempt is a distinct span unless told otherwise.
 */
let counter = 0;

function nextId(width: number): string {
  counter++;
  return counter.toString(16).padStart(width, '0');
}

export interface PlacementInput {
  service?: string;
  node?: string;
  cluster?: string;
  region?: string;
  zone?: string;
}

export function placement(input: PlacementInput = {}): Placement {
  return {
    service: input.service ?? 'payments',
    node: input.node ?? 'payments-a',
    cluster: input.cluster ?? 'c1',
    region: input.region ?? 'eu-west-1',
    zone: input.zone ?? '',
  };
}

interface CommonInput extends PlacementInput {
  key?: string;
  tenant?: string;
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  /** Start, in seconds from the test's epoch (2026-01-01T00:00:00Z). */
  at?: number;
  /** Start as a Unix epoch millisecond, for a test that needs an absolute time; wins over `at`. */
  startUnixMillis?: number;
  /** Duration in milliseconds. */
  durationMillis?: number;
  operation?: string;
}

function common(input: CommonInput) {
  const start = input.startUnixMillis ?? TEST_EPOCH_UNIX_MILLIS + (input.at ?? 0) * 1000;
  return {
    key: input.key ?? 'k1',
    tenant: input.tenant ?? '',
    traceId: input.traceId ?? nextId(32),
    spanId: input.spanId ?? nextId(16),
    parentSpanId: input.parentSpanId ?? '',
    startUnixMillis: start,
    endUnixMillis: start + (input.durationMillis ?? 100),
    placement: placement(input),
    operation: input.operation ?? '/payments',
  };
}

/** How the request ended: by default it succeeded, with no HTTP status and nothing stated. */
interface RequestInput {
  statusCode?: number;
  /** Default: `statusCode` is 5xx. */
  failed?: boolean;
  effect?: Effect | '';
  released?: boolean;
  businessId?: string;
  method?: HttpMethod | '';
}

function request(input: RequestInput) {
  const statusCode = input.statusCode ?? 0;
  return {
    statusCode,
    failed: input.failed ?? statusCode >= 500,
    effect: input.effect ?? '',
    released: input.released ?? false,
    businessId: input.businessId ?? '',
    method: input.method ?? ('' as const),
  };
}

export function server(
  input: CommonInput &
    RequestInput & {
      outcome?: Outcome;
      store?: string;
      scope?: ScopeLevel | '';
      effectSpansDeclared?: boolean;
      /** 'http': the outcome was inferred from the response; absent by default (recorded). */
      outcomeFrom?: 'http';
    } = {},
): ServerAttempt {
  const base = common(input);
  return createServerAttempt({
    ...base,
    outcome: input.outcome ?? 'miss',
    store: input.store ?? `${base.placement.service}/node:${base.placement.node}`,
    scope: input.scope ?? 'node',
    ...request(input),
    effectSpansDeclared: input.effectSpansDeclared ?? false,
    outcomeFrom: input.outcomeFrom,
  });
}

export function arrival(input: CommonInput & RequestInput = {}): Arrival {
  return createArrival({ ...common(input), ...request(input) });
}

/** A side-effect span (`ledger.charge` by default) under the attempt named by `parentSpanId`. */
export function effect(input: CommonInput & { failed?: boolean } = {}): SideEffect {
  return createSideEffect({
    ...common({ operation: 'ledger.charge', ...input }),
    failed: input.failed ?? false,
  });
}

export function client(
  input: CommonInput & {
    resendCount?: number;
    target?: string;
    statusCode?: number;
    error?: string;
    keyFrom?: 'child';
  } = {},
): ClientAttempt {
  return createClientAttempt({
    ...common({ service: 'checkout', node: 'checkout-1', ...input }),
    resendCount: input.resendCount ?? 0,
    target: input.target ?? 'payments.internal:443',
    statusCode: input.statusCode ?? 200,
    error: input.error ?? '',
    keyFrom: input.keyFrom,
  });
}

/**
 * Steady traffic of one node: `spans` server spans per second from `fromSecond` to `toSecond`;
 * with `latency`, every second carries that duration histogram (see `NodeActivity.latency`).
 */
export function activity(
  input: PlacementInput & {
    fromSecond: number;
    toSecond: number;
    spans?: number;
    errors?: number;
    latency?: readonly number[];
  },
): NodeActivity[] {
  const out: NodeActivity[] = [];
  for (let second = input.fromSecond; second < input.toSecond; second++) {
    const sample: NodeActivity = {
      placement: placement(input),
      bucketStartUnixMillis: TEST_EPOCH_UNIX_MILLIS + second * 1000,
      bucketMillis: 1000,
      spans: input.spans ?? 10,
      errors: input.errors ?? 0,
    };
    if (input.latency !== undefined) sample.latency = [...input.latency];
    out.push(sample);
  }
  return out;
}
