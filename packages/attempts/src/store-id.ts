import type { Placement, ScopeLevel } from './attempt.ts';

/**
 * Store ids derived when a span declares a scope but names no store (`idempotency.store` absent):
 *
 *   `<service>/node:<node>`   `<service>/cluster:<cluster>`   `<service>/region:<region>`
 *   `<service>/tenant:<tenant>`   `<service>/global`
 *
 * and `<service>/unknown` when the span declares neither store nor scope (the detector treats it
 * as one store per service). The service prefix keeps two services' stores apart: payments' node
 * store on host a-1 is not ledger's node store on host a-1. A placement value the resource does
 * not carry is written `?` (`payments/cluster:?`), so the gap is visible in evidence.
 *
 * A store id the span gives explicitly is used verbatim, unprefixed: the sender named the store
 * instance, and two services may share one on purpose.
 */
export const MISSING_VALUE = '?';

export function derivedStoreId(placement: Placement, scope: ScopeLevel | '', tenant: string): string {
  const service = placement.service || MISSING_VALUE;
  switch (scope) {
    case 'node':
      return `${service}/node:${placement.node || MISSING_VALUE}`;
    case 'cluster':
      return `${service}/cluster:${placement.cluster || MISSING_VALUE}`;
    case 'region':
      return `${service}/region:${placement.region || MISSING_VALUE}`;
    case 'tenant':
      return `${service}/tenant:${tenant || MISSING_VALUE}`;
    case 'global':
      return `${service}/global`;
    case '':
      return `${service}/unknown`;
  }
}
