import type { DedupScope, DedupSpec } from './scenario.ts';
import type { SimNode } from './topology.ts';

/**
 * A store's answer, the values the services write as `idempotency.outcome` (docs/design.md). `error`
 * is a lookup that failed: the flow injects it (`storeErrorRate`, error spikes); `KeyStores` never
 * answers it.
 */
export type DedupOutcome = 'miss' | 'hit' | 'in_progress' | 'mismatch' | 'error';

/**
 * The id of the store a node consults for a tenant's key. With `recordStoreId` the service names
 * its store instance itself, as `idempotency.store` (`payments-idem@prod-a`). Without, the span
 * carries only `idempotency.scope` and keyscope derives the id: truth then spells the id keyscope
 * documents for that scope and placement (`documentedDerivedStoreId`).
 */
export function storeIdFor(service: string, dedup: DedupSpec, node: SimNode, tenant: string): string {
  if (!dedup.recordStoreId) return documentedDerivedStoreId(service, dedup.scope, node, tenant);
  switch (dedup.scope) {
    case 'node':
      return `${service}-idem@${node.instanceId}`;
    case 'cluster':
      return `${service}-idem@${node.cluster}`;
    case 'region':
      return `${service}-idem@${node.region}`;
    case 'tenant':
      return `${service}-idem@tenant-${tenant}`;
    case 'global':
      return `${service}-idem@global`;
  }
}

/**
 * The store id packages/attempts/README.md ("Store ids") documents for a span that declares a
 * scope but no store: `<service>/node:<service.instance.id>`, `<service>/cluster:<k8s.cluster.name>`,
 * `<service>/region:<cloud.region>`, `<service>/tenant:<tenant>`, `<service>/global`. It is written
 * here from that rule, not borrowed from the attempts stage: ground truth that reused the stage's
 * own derivation would agree with any mistake in it. Every simulated resource carries each of these
 * attributes, so the documented `?` for a missing one never arises.
 */
function documentedDerivedStoreId(service: string, scope: DedupScope, node: SimNode, tenant: string): string {
  switch (scope) {
    case 'node':
      return `${service}/node:${node.instanceId}`;
    case 'cluster':
      return `${service}/cluster:${node.cluster}`;
    case 'region':
      return `${service}/region:${node.region}`;
    case 'tenant':
      return `${service}/tenant:${tenant}`;
    case 'global':
      return `${service}/global`;
  }
}

export interface Decision {
  outcome: Exclude<DedupOutcome, 'error'>;
  /** For a `miss`: why the key was admitted. */
  admission: 'fresh' | 'expired' | 'released' | 'concurrent' | 'lease_expired' | undefined;
  /** For a `miss`: pass to `complete` when the execution finishes. */
  record: KeyRecord | undefined;
}

export interface KeyRecord {
  admittedUnixMillis: number;
  expiresUnixMillis: number;
  /** Undefined while the execution runs. */
  completedUnixMillis: number | undefined;
  payload: string;
  /** Given back by a failed execution: forgotten as if expired. */
  released: boolean;
}

/**
 * What every store knows about ONE key. Keys never interact, so each flow owns its own instance and
 * flows can be simulated one at a time, in any order of generation.
 */
export class KeyStores {
  private readonly records = new Map<string, KeyRecord[]>();

  /** The store's answer at `t`; a `miss` admits the key (an execution starts). */
  decide(storeId: string, dedup: DedupSpec, t: number, payload: string): Decision {
    const records = this.records.get(storeId) ?? [];
    this.records.set(storeId, records);
    const live = records.filter((r) => t < r.expiresUnixMillis);
    // Without an in-flight lock the key is written only when the execution completes, so a
    // concurrent attempt finds nothing.
    const visible = live.filter((r) => dedup.inFlightLock || (r.completedUnixMillis ?? Infinity) <= t);
    const completed = visible.find((r) => r.completedUnixMillis !== undefined && r.completedUnixMillis <= t);
    if (completed) {
      const outcome = dedup.fingerprintsPayload && completed.payload !== payload ? 'mismatch' : 'hit';
      return { outcome, admission: undefined, record: undefined };
    }
    let admission: Decision['admission'] = 'fresh';
    const running = visible.find((r) => r.completedUnixMillis === undefined || r.completedUnixMillis > t);
    if (running) {
      if (t < running.admittedUnixMillis + dedup.inFlightLeaseMillis) {
        return { outcome: 'in_progress', admission: undefined, record: undefined };
      }
      admission = 'lease_expired';
    } else if (live.length > 0) {
      admission = 'concurrent';
    } else if (records.length > 0) {
      admission = records[records.length - 1]!.released ? 'released' : 'expired';
    }
    const record: KeyRecord = {
      admittedUnixMillis: t,
      expiresUnixMillis: t + dedup.keyTtlMillis,
      completedUnixMillis: undefined,
      payload,
      released: false,
    };
    records.push(record);
    return { outcome: 'miss', admission, record };
  }

  complete(record: KeyRecord, t: number): void {
    record.completedUnixMillis = t;
  }

  /** A failed execution gives its key back at `t`: the next attempt is admitted. */
  release(record: KeyRecord, t: number): void {
    record.completedUnixMillis = t;
    record.expiresUnixMillis = Math.min(record.expiresUnixMillis, t);
    record.released = true;
  }
}
