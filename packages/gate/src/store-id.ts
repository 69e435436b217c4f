import type { Placement } from './placement.ts';
import type { ScopeLevel } from './scope-config.ts';

/**
 * The id recorded as `idempotency.store`: the same id keyscope derives from `idempotency.scope`
 * and the resource when a span names no store (packages/attempts/README.md, "Store ids"), so a
 * service that switches between recording and omitting it keeps one identity per store.
 */
export function storeIdFor(placement: Placement, scope: ScopeLevel, tenant: string): string {
  const service = placement.service || '?';
  switch (scope) {
    case 'node':
      return `${service}/node:${placement.node || '?'}`;
    case 'cluster':
      return `${service}/cluster:${placement.cluster || '?'}`;
    case 'region':
      return `${service}/region:${placement.region || '?'}`;
    case 'tenant':
      return `${service}/tenant:${tenant || '?'}`;
    case 'global':
      return `${service}/global`;
  }
}
