/**
 * Whether the evidence coverage counts `partitionKey`: one key in `oneIn`, by a hash of the key
 * (FNV-1a over alternate characters in two lanes, which halves its serial chain, then a murmur3
 * finaliser so that the low bits mix), so the sample is the same keys whatever order their spans
 * come in and on whichever instance judges them. Coverage is a ratio, and a sample of whole keys
 * estimates it at a fraction of the join's cost per attempt.
 */
export function coversKey(partitionKey: string, oneIn: number): boolean {
  if (oneIn <= 1) return true;
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  const length = partitionKey.length;
  let i = 0;
  for (; i + 1 < length; i += 2) {
    a = Math.imul(a ^ partitionKey.charCodeAt(i), 0x01000193);
    b = Math.imul(b ^ partitionKey.charCodeAt(i + 1), 0x01000193);
  }
  if (i < length) a = Math.imul(a ^ partitionKey.charCodeAt(i), 0x01000193);
  let hash = a ^ Math.imul(b, 0x9e3779b1);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) % oneIn === 0;
}
