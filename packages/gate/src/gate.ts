import { randomUUID } from 'node:crypto';
import { type Span, trace } from '@opentelemetry/api';
import { nonEmptyStringAt, objectAt, oneOf, positiveIntegerAt } from './config-check.ts';
import type { DedupStore } from './dedup-store.ts';
import {
  GATE_IN_PROGRESS,
  GATE_KEY_MISSING,
  GATE_KEY_REUSED,
  GATE_STORE_UNAVAILABLE,
  GATE_TENANT_MISSING,
  IdempotencyRequestError,
} from './errors.ts';
import { checkIdempotencyKey } from './idempotency-key.ts';
import { checkScopeConfig, type ScopeConfig } from './scope-config.ts';
import { EFFECTS, type Effect, type Outcome, recordDecision } from './span-decision.ts';
import { storeIdFor } from './store-id.ts';
import { type DedupMode, verify } from './verify.ts';

export interface IdempotencyGateOptions {
  readonly store: DedupStore;
  /** Verified when the gate is created: a configuration that permits duplicates refuses to start. */
  readonly scope: ScopeConfig;
  /**
   * `idempotency.store` on every span. Default: derived from the key scope and placement
   * (`payments/node:payments-a-1`), as keyscope derives it. Give one id on every instance that
   * shares a store.
   */
  readonly storeId?: string;
  /** How long a completed key is replayed. Default 24 hours. */
  readonly ttlMillis?: number;
  /**
   * How long an execution holds its key before a retry may take it over, for an owner that
   * crashed. Longer than the slowest execution, or a slow one runs twice. Default 60 seconds.
   */
  readonly lockTtlMillis?: number;
  /** Unix epoch milliseconds. Default `Date.now`. */
  readonly clock?: () => number;
}

export interface GateRequest {
  readonly key: string;
  readonly fingerprint: string;
  /** Namespaces the key (and names the store when the key scope is tenant). */
  readonly tenant?: string;
  /** Where the decision is recorded. Default: the active span. */
  readonly span?: Span;
}

/** The store's answer to one request, and what the caller must do with it. */
export type Admission =
  | { readonly outcome: 'miss'; readonly execution: Execution }
  | { readonly outcome: 'hit'; readonly response: string }
  | { readonly outcome: 'in_progress' }
  | { readonly outcome: 'mismatch' };

/**
 * The key held by one admitted request. Exactly one of `complete` and `fail` must be called; a
 * second call is ignored.
 */
export interface Execution {
  /**
   * Stores `response` for replay. Resolves false when it could not be stored (the lock expired
   * and another execution took the key, or the store failed); the failure is recorded on the span
   * and the caller still answers its client, because the work has been done.
   */
  complete(response: string): Promise<boolean>;
  /**
   * The execution failed: the key is released so a retry executes, and the span says so
   * (`idempotency.released` true, the outcome stays `miss`). `effect` says whether the side effect
   * took place before the failure: `none` (it failed before it: keyscope then counts no
   * execution), `committed` (the retry will do it again), or `unknown` (the default: a timeout
   * against the processor; keyscope reports a retry that executes as a suspected duplicate).
   * Throws KS_GATE_CONFIG_INVALID, before releasing anything, for another value.
   */
  fail(effect?: Effect): Promise<void>;
}

export interface RunOptions {
  readonly tenant?: string;
  readonly span?: Span;
  /** Default true: a missing key is KS_GATE_KEY_MISSING. With false, work runs without the gate. */
  readonly required?: boolean;
  /**
   * Whether the side effect took place before `work` threw this error, recorded with the release
   * (see `Execution.fail`). Default: `unknown`. A service that knows its errors says so, e.g.
   * `(error) => (error instanceof ProcessorUnavailable ? 'none' : 'unknown')`.
   */
  readonly effectOfError?: (error: unknown) => Effect;
}

export interface RunResult<T> {
  /** On a replay, a JSON copy of the first execution's value. */
  readonly value: T;
  readonly replayed: boolean;
}

export interface IdempotencyGate {
  /** The validity condition `verify()` found: why this gate's dedup is sound. */
  readonly mode: DedupMode;
  readonly scope: ScopeConfig;
  /** The store id recorded for a request of `tenant`. */
  storeIdFor(tenant?: string): string;
  /**
   * Consults the store and records the decision on the span. Throws KS_GATE_KEY_INVALID,
   * KS_GATE_TENANT_MISSING, or KS_GATE_STORE_UNAVAILABLE (fail closed: nothing executes).
   */
  admit(request: GateRequest): Promise<Admission>;
  /**
   * The plain API: runs `work` once per key and replays its value (JSON) to retries. Throws
   * KS_GATE_KEY_MISSING, KS_GATE_IN_PROGRESS (409), KS_GATE_KEY_REUSED (422) and `admit`'s errors;
   * an error thrown by `work` releases the key and is rethrown.
   */
  run<T>(
    key: string | undefined,
    fingerprint: string,
    work: () => T | Promise<T>,
    options?: RunOptions,
  ): Promise<RunResult<T>>;
}

const DAY_MILLIS = 24 * 60 * 60 * 1000;

export function createIdempotencyGate(options: IdempotencyGateOptions): IdempotencyGate {
  const checked = objectAt(options, 'gate', [
    'store',
    'scope',
    'storeId',
    'ttlMillis',
    'lockTtlMillis',
    'clock',
  ]);
  const store = options.store;
  const scope = checkScopeConfig(checked.scope, 'gate.scope');
  const mode = verify(scope);
  const fixedStoreId =
    options.storeId === undefined ? undefined : nonEmptyStringAt(options.storeId, 'gate.storeId');
  const ttlMillis = positiveIntegerAt(options.ttlMillis ?? DAY_MILLIS, 'gate.ttlMillis');
  const lockTtlMillis = positiveIntegerAt(options.lockTtlMillis ?? 60_000, 'gate.lockTtlMillis');
  const clock = options.clock ?? Date.now;

  function storeIdOf(tenant: string): string {
    return fixedStoreId ?? storeIdFor(scope.placement, scope.keyScope, tenant);
  }

  async function admit(request: GateRequest): Promise<Admission> {
    const key = checkIdempotencyKey(request.key);
    const tenant = request.tenant ?? '';
    if (scope.keyScope === 'tenant' && tenant === '') {
      throw new IdempotencyRequestError(
        GATE_TENANT_MISSING,
        'key scope is tenant, and the request named no tenant',
      );
    }
    const span = request.span ?? trace.getActiveSpan();
    // Only an admitted request can have an effect; every other answer ran nothing.
    const record = (outcome: Outcome, effect: Effect = 'none', released = false) =>
      recordDecision(span, {
        key,
        store: storeIdOf(tenant),
        scope: scope.keyScope,
        outcome,
        effect,
        released,
        tenant,
      });
    // Within one store, a key belongs to its tenant: another tenant's identical key is another request.
    const storeKey = tenant === '' ? key : `${tenant}\u0000${key}`;
    const owner = randomUUID();
    const now = clock();

    let existing: Awaited<ReturnType<DedupStore['insertIfAbsent']>>;
    try {
      existing = await store.insertIfAbsent(
        storeKey,
        {
          state: 'in_progress',
          fingerprint: request.fingerprint,
          owner,
          expiresAtUnixMillis: now + lockTtlMillis,
        },
        now,
      );
    } catch (error) {
      record('error');
      throw new IdempotencyRequestError(
        GATE_STORE_UNAVAILABLE,
        `dedup store ${storeIdOf(tenant)} did not answer`,
        {
          cause: error,
        },
      );
    }

    if (existing === null) {
      // Until it completes or fails, nobody knows whether the effect took place.
      record('miss', 'unknown');
      return { outcome: 'miss', execution: execution(storeKey, owner, span, record) };
    }
    // A different payload is the client's mistake whatever state the first request is in.
    if (existing.fingerprint !== request.fingerprint) {
      record('mismatch');
      return { outcome: 'mismatch' };
    }
    if (existing.state === 'in_progress') {
      record('in_progress');
      return { outcome: 'in_progress' };
    }
    record('hit');
    return { outcome: 'hit', response: existing.response };
  }

  function execution(
    storeKey: string,
    owner: string,
    span: Span | undefined,
    record: (outcome: Outcome, effect?: Effect, released?: boolean) => void,
  ): Execution {
    let settled = false;
    return {
      async complete(response) {
        if (settled) return false;
        settled = true;
        // The work has been done, whether or not its response can be stored for replay.
        record('miss', 'committed');
        try {
          if (await store.complete(storeKey, owner, response, clock() + ttlMillis)) return true;
          span?.addEvent('idempotency.lock_lost', {
            reason: 'the lock expired and another execution took the key; this response is not replayed',
          });
        } catch (error) {
          span?.recordException(error as Error);
        }
        return false;
      },
      async fail(effect: Effect = 'unknown') {
        oneOf(effect, 'execution.fail(effect)', EFFECTS);
        if (settled) return;
        settled = true;
        record('miss', effect, true);
        try {
          await store.release(storeKey, owner);
        } catch (error) {
          // The key stays locked until lockTtlMillis: retries get 409 until then, never a blind execution.
          span?.recordException(error as Error);
        }
      },
    };
  }

  async function run<T>(
    key: string | undefined,
    fingerprint: string,
    work: () => T | Promise<T>,
    runOptions: RunOptions = {},
  ): Promise<RunResult<T>> {
    if (key === undefined || key === '') {
      if (runOptions.required === false) return { value: await work(), replayed: false };
      throw new IdempotencyRequestError(GATE_KEY_MISSING, 'an idempotency key is required, received none');
    }
    const admission = await admit({
      key,
      fingerprint,
      ...(runOptions.tenant === undefined ? {} : { tenant: runOptions.tenant }),
      ...(runOptions.span === undefined ? {} : { span: runOptions.span }),
    });
    switch (admission.outcome) {
      case 'hit':
        return { value: (JSON.parse(admission.response) as { value: T }).value, replayed: true };
      case 'in_progress':
        throw new IdempotencyRequestError(
          GATE_IN_PROGRESS,
          `a request with idempotency key ${key} is still executing`,
        );
      case 'mismatch':
        throw new IdempotencyRequestError(
          GATE_KEY_REUSED,
          `idempotency key ${key} was first used with another payload; use a new key for a new request`,
        );
      case 'miss': {
        let value: T;
        let response: string;
        try {
          value = await work();
          response = JSON.stringify({ value });
        } catch (error) {
          await admission.execution.fail(runOptions.effectOfError?.(error) ?? 'unknown');
          throw error;
        }
        await admission.execution.complete(response);
        return { value, replayed: false };
      }
    }
  }

  return Object.freeze({ mode, scope, storeIdFor: (tenant = '') => storeIdOf(tenant), admit, run });
}
