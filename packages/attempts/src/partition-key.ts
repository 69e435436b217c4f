import type { Attempt } from './attempt.ts';
import type { Mapping } from './mapping.ts';

/**
 * The string that routes an attempt to its key state (the Kafka message key when attempts are
 * repartitioned). With `keyNamespace: 'tenant'` two tenants may use the same key for unrelated
 * requests, so the tenant is part of the identity: `tenant + '\u0000' + key` (NUL cannot occur in
 * an HTTP header value, so the split is unambiguous; an unknown tenant is ''). With 'global' it is
 * the key itself, which keeps cross-tenant key collisions visible to the detector.
 */
export function partitionKey(
  attempt: Pick<Attempt, 'key' | 'tenant'>,
  mapping: Pick<Mapping, 'keyNamespace'>,
): string {
  return mapping.keyNamespace === 'tenant' ? attempt.tenant + '\u0000' + attempt.key : attempt.key;
}
