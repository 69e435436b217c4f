import type { Attempt } from './attempt.ts';
import type { Mapping } from './mapping.ts';

/**
 * The string that routes an attempt to its key state (the Kafka message key when attempts are
 * repartitioned). With `keyNamespace: 'tenant'` two tenants may use the same key for unrelated
 * requests, so the tenant is part of the identity: `key + '\u0000' + tenant` (NUL cannot occur in
 * an HTTP header value, so the split is unambiguous; an unknown tenant is ''). Key first, so that
 * a key's partitions under every tenant are one range in the store's attempts index (the key
 * lookup). With 'global' it is the key itself, which keeps cross-tenant key collisions visible to
 * the detector. The detector, the store and the Kafka roles all key by this one function.
 */
export function partitionKey(
  attempt: Pick<Attempt, 'key' | 'tenant'>,
  mapping: Pick<Mapping, 'keyNamespace'>,
): string {
  return mapping.keyNamespace === 'tenant' ? attempt.key + '\u0000' + attempt.tenant : attempt.key;
}
