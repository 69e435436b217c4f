import { createHash } from 'node:crypto';

/**
 * A request fingerprint: SHA-256 over the operation and the payload. Objects are serialized with
 * their keys sorted, so a client that rebuilds the same payload with another key order still
 * matches; bytes and strings are hashed as sent. Including the operation makes one key reused on
 * another route a mismatch (422) rather than a replay of the wrong route's response.
 */
export function requestFingerprint(method: string, route: string, payload: unknown): string {
  const hash = createHash('sha256');
  hash.update(`${method.toUpperCase()} ${route}\n`);
  if (payload instanceof Uint8Array) hash.update('bytes\n').update(payload);
  else if (typeof payload === 'string') hash.update('text\n').update(payload);
  else hash.update('json\n').update(canonicalJson(payload));
  return hash.digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null && !(value instanceof Date)) {
    const entries = Object.keys(value)
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
