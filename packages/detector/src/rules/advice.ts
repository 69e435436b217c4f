import type { ScopeLevel } from '@keyscope/attempts';
import { covers, type SpreadLevel, spreadOf } from '../coverage/scope-report.ts';
import type { Finding, FindingClass } from './finding.ts';

const NEXT_LEVEL_NAME: Record<SpreadLevel, string> = {
  node: 'one node',
  cluster: 'one cluster',
  region: 'one region',
  global: 'every region',
};

/**
 * The advice an incident carries, following docs/design.md's decision boundary: dedup is sound only
 * while scope, pinning or downstream idempotency holds; when the key scope is narrower, name the
 * smallest scope that covers what was observed — and never recommend a global namespace by
 * reflex, because it puts a cross-region write and a hot partition on every mutation.
 */
export function adviceFor(findingClass: FindingClass, facts: AdviceFacts): string {
  const advice = classAdvice(findingClass, facts);
  if (findingClass === 'key_collision') return advice;
  const timing = timingContext(facts.timing);
  return timing === '' ? advice : `${advice} ${timing}`;
}

function classAdvice(findingClass: FindingClass, facts: AdviceFacts): string {
  const declared = mostDeclared(facts.declared);
  const { spread, proxies } = facts;
  const stores = facts.stores;
  const declaredText = declared === 'unknown' ? 'an undeclared scope' : `${declared} scope`;

  switch (findingClass) {
    case 'cross_store_duplicate':
    case 'scope_violation': {
      const head =
        findingClass === 'cross_store_duplicate'
          ? `Retries of one key executed in ${stores} different dedup stores: keys have ${declaredText}, but retries reached ${NEXT_LEVEL_NAME[spread]}.`
          : `Retries of one key already reach ${stores} dedup stores (keys have ${declaredText}; retries reached ${NEXT_LEVEL_NAME[spread]}); nothing has executed twice yet, but the next slow response will.`;
      return [head, widenAdvice(declared, spread), proxyAdvice(proxies)].filter((s) => s !== '').join(' ');
    }
    case 'same_store_duplicate': {
      const { race, ttl, storeUnknown } = facts;
      const parts: string[] = [];
      if (storeUnknown) {
        parts.push(
          "Executions of one key ran on different nodes of a service whose spans name no dedup store and declare no key scope, so keyscope cannot tell whether they shared a store. Declare the scope the service's keys have: idempotency.scope (or idempotency.store) on the decision span, or the service's scope in the attribute mapping (scopes); a node-local store then shows as the cross-store duplicate it is.",
        );
      }
      if (race) {
        parts.push(
          'Attempts of one key overlapped in time and both executed in the same store: the store admits a key without an in-flight lock. Record the key as in progress atomically before executing (insert-if-absent) and answer concurrent attempts with 409.',
        );
      }
      if (ttl) {
        parts.push(
          `A retry arrived after the store had forgotten the key (longest gap ${formatDuration(facts.longestGapMillis)}). Keep keys at least as long as clients retry (their longest backoff plus total timeout), or make clients give up before the key expires.`,
        );
      }
      return parts.join(' ');
    }
    case 'suspected_duplicate': {
      const parts: string[] = [];
      // Incidents of suspects that rest on failed admissions keep the words they always had.
      if (facts.effectUnknown || !facts.executionUnseen) {
        parts.push(
          'A key ran again after an earlier attempt of it had been admitted and failed. The first attempt failed after admission; whether its effect committed is unknown, so this is a double side effect only if it did.',
          'To settle it, record idempotency.effect (committed or none) on the decision or SERVER span of a request that fails after admission, or name the side-effect spans in the attribute mapping (sideEffectSpans, e.g. ledger.charge) and put the key on them.',
        );
      }
      if (facts.executionUnseen) {
        parts.push(
          `A key executed once in the spans, and the spans say an earlier attempt probably executed where its own spans were lost: a send reset or left unanswered as a node of the service went silent, a store answering in_progress for a lock no visible execution held. Check these keys against the system the side effect reaches (the payment processor): if it ran twice, the retry reached a store that had not seen the key (keys have ${declaredText}): widen the key namespace to cover the nodes a retry fails over to, or pin a key's retries to one store, or make the side effect idempotent downstream.`,
          "Spans are lost when a process dies before its SDK exports them (SIGKILL, an OOM kill): export more often (the BatchSpanProcessor's scheduledDelayMillis), flush the SDK on SIGTERM within the grace period, and let the kernel's resets show in CLIENT spans (error.type).",
        );
      }
      if (stores >= 2)
        parts.push(
          `Either way, the repeats reached ${stores} dedup stores (keys have ${declaredText}; retries reached ${NEXT_LEVEL_NAME[spread]}). ${widenAdvice(declared, spread)}`,
        );
      parts.push(proxyAdvice(proxies));
      return parts.filter((s) => s !== '').join(' ');
    }
    case 'absorbed_duplicate':
      return `The front tier executed one key twice, and a downstream service's dedup caught the repeat: no double side effect, thanks to downstream idempotency. The front tier's keys have ${declaredText} while its retries reached ${NEXT_LEVEL_NAME[spread]}; ${widenAdvice(declared, spread, true)}`;
    case 'key_collision':
      return (
        'Two tenants sent the same idempotency key into one namespace' +
        (facts.crossTenantReplay ? ', and one was served the result stored for the other.' : '.') +
        ' Client-generated keys are unique per client at best: qualify the key with the tenant (a tenant-scoped namespace) rather than trusting clients to produce globally unique keys.'
      );
  }
}

function widenAdvice(declared: ScopeLevel | 'unknown', spread: SpreadLevel, brief = false): string {
  if (declared !== 'unknown' && covers(declared, spread)) {
    return 'The declared scope should cover this; check that every instance really shares the store it reports.';
  }
  if (spread === 'global') {
    return (
      'Retries crossed regions. Widening the key namespace to global would put a cross-region write on every mutation; ' +
      'prefer pinning retries of a key to the region that first admitted it (fail the retry rather than fail over mid-request), ' +
      'or make the side effect idempotent downstream.'
    );
  }
  const fix = `widen the key namespace to ${spread} scope (the smallest that covers every observed retry), or enforce pinning of a key's retries to one ${declared === 'unknown' ? 'endpoint' : declared}, or make the side effect idempotent downstream.`;
  return brief ? `fix it before relying on that: ${fix}` : `Smallest sound fix: ${fix}`;
}

function proxyAdvice(proxies: number): string {
  if (proxies === 0) return '';
  return `${proxies} of these were retried by a proxy or load balancer, not by the client: stop it from retrying non-idempotent requests, or make it forward the same idempotency key to the same store.`;
}

/**
 * The retry timing behind the repeats, as context: the callers' wait and how long the first
 * executions ran. A timeout change makes the overlap rarer, never impossible, so it is never
 * offered as the fix — the fix stays the scope rule above.
 */
function timingContext(timing: RetryTimingSummary): string {
  const { callerWaitMillis, executionNode, executionP90Millis, outlived, clipped, judged } = timing;
  if (callerWaitMillis === null && executionP90Millis === null) return '';
  const parts: string[] = [];
  if (callerWaitMillis !== null) parts.push(`callers gave up after ${formatDuration(callerWaitMillis)}`);
  if (executionP90Millis !== null) {
    const where = executionNode === '' ? '' : ` on ${executionNode}`;
    // A clipped execution's duration is how long it ran at least: so is a p90 that counts one.
    const atLeast = clipped > 0 ? 'at least ' : '';
    parts.push(
      `first executions${where} took ${atLeast}${formatDuration(executionP90Millis)} at p90 during the window`,
    );
  }
  const clippedText =
    clipped > 0
      ? ` (${clipped} of them ran at least until the caller left: their SERVER spans ended at the disconnect, with no response sent)`
      : '';
  const outlivedText =
    judged > 0 ? ` ${outlived} of ${judged} first executions outlived the caller's wait${clippedText}.` : '';
  return `Retry timing: ${parts.join('; ')}.${outlivedText} A longer timeout would make such repeats rarer, not impossible: it is context, not the fix.`;
}

/**
 * What the timing of an incident's repeats says, to the nearest 100 ms: the median wait of the
 * callers before they gave up (null when no CLIENT span of its keys shows a failed send), and the
 * p90 duration of the first executions on the node that ran most of them (null without any).
 */
export interface RetryTimingSummary {
  callerWaitMillis: number | null;
  executionNode: string;
  executionP90Millis: number | null;
  /** Findings whose first execution outlived the caller's wait, of those where both are known. */
  outlived: number;
  /** Of those, the ones whose first execution's span ended at its caller's disconnect. */
  clipped: number;
  judged: number;
}

/** What one finding contributes to its incident's advice, computed once when it is placed. */
export interface FindingFacts {
  /**
   * Every store the key's attempts at its tier consulted and every node they landed on, read from
   * its attempts: the finding's own lists stop at `maxStoresPerFinding`, its incident's totals do not.
   */
  stores: readonly string[];
  nodes: readonly string[];
  declared: Partial<Record<ScopeLevel, number>>;
  spread: SpreadLevel;
  proxy: boolean;
  cause: Finding['cause'];
  gapMillis: number;
  /** `Finding.callerWaitMillis`; null when unknown. */
  callerWaitMillis: number | null;
  /** The node of the key's first admission at its tier ('' when unknown); its first execution's duration. */
  executionNode: string;
  executionMillis: number | null;
  outlived: boolean | null;
  /** `Finding.firstExecutionClipped`. */
  clipped: boolean;
}

/** The facts of all of an incident's findings together. */
export interface AdviceFacts {
  stores: number;
  declared: Partial<Record<ScopeLevel, number>>;
  spread: SpreadLevel;
  proxies: number;
  race: boolean;
  ttl: boolean;
  /** Some findings ran on different nodes of a service whose spans name no store (`store_unknown`). */
  storeUnknown: boolean;
  crossTenantReplay: boolean;
  /** Some findings are suspected on an admitted attempt that failed (`effect_unknown`). */
  effectUnknown: boolean;
  /** Some findings are suspected on marks of an execution whose spans were lost (`execution_unseen`). */
  executionUnseen: boolean;
  longestGapMillis: number;
  timing: RetryTimingSummary;
}

/** Spread levels from narrowest to widest. */
export const SPREAD_ORDER: readonly SpreadLevel[] = ['node', 'cluster', 'region', 'global'];

export function factsOf(finding: Finding): FindingFacts {
  const declared: Partial<Record<ScopeLevel, number>> = {};
  for (const a of finding.attempts) {
    if (a.kind === 'server' && a.scope !== '') declared[a.scope] = (declared[a.scope] ?? 0) + 1;
  }
  const landed = finding.attempts.filter(
    (a) =>
      (a.kind === 'server' || a.kind === 'arrival') &&
      a.placement.service === finding.service &&
      a.operation === finding.operation,
  );
  const firstExecution = landed.find((a) => a.kind === 'server' && a.outcome === 'miss');
  // As evaluate-key.ts lists them, before the finding's lists are cut.
  const stores = new Set<string>();
  const nodes = new Set<string>();
  for (const a of landed) {
    if (a.kind === 'server') stores.add(a.store);
    if (a.placement.node !== '') nodes.add(a.placement.node);
  }
  return {
    stores: [...stores],
    nodes: [...nodes],
    declared,
    spread: spreadOf(landed),
    proxy: finding.retriedBy === 'proxy',
    cause: finding.cause,
    // The store's retention is measured from when it recorded the key, the first run's end.
    gapMillis: finding.idleMillis ?? finding.gapMillis ?? 0,
    callerWaitMillis: finding.callerWaitMillis ?? null,
    executionNode: firstExecution?.placement.node ?? '',
    executionMillis: finding.firstExecutionMillis ?? null,
    outlived: finding.outlivedCallerWait ?? null,
    clipped: finding.firstExecutionClipped ?? false,
  };
}

function mostDeclared(counts: Partial<Record<ScopeLevel, number>>): ScopeLevel | 'unknown' {
  let best: ScopeLevel | 'unknown' = 'unknown';
  let most = 0;
  for (const [scope, count] of Object.entries(counts) as [ScopeLevel, number][]) {
    if (count > most) [best, most] = [scope, count];
  }
  return best;
}

function formatDuration(millis: number): string {
  if (millis >= 3_600_000) return `${(millis / 3_600_000).toFixed(1)} h`;
  if (millis >= 60_000) return `${(millis / 60_000).toFixed(1)} min`;
  return `${(millis / 1000).toFixed(1)} s`;
}
