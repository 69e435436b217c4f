import { describe, expect, it } from 'vitest';
import { ResourceCache } from '../src/resource-cache.ts';
import type { Resource } from '../src/span.ts';

const encoded = (text: string) => {
  const bytes = new TextEncoder().encode(text);
  return { bytes, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
};

function remember(cache: ResourceCache, text: string): Resource {
  const { bytes, view } = encoded(text);
  return cache.set(bytes, view, 0, bytes.length, { attributes: { text } as Resource['attributes'] });
}

function lookup(cache: ResourceCache, text: string): Resource | undefined {
  const { bytes, view } = encoded(text);
  return cache.get(bytes, view, 0, bytes.length);
}

describe('ResourceCache', () => {
  it('returns the same frozen resource for the same bytes, and nothing for other bytes', () => {
    const cache = new ResourceCache(8, 1024);
    const resource = remember(cache, 'service.name=payments');
    expect(lookup(cache, 'service.name=payments')).toBe(resource);
    expect(Object.isFrozen(resource)).toBe(true);
    expect(lookup(cache, 'service.name=paymentz')).toBeUndefined();
  });

  it('keeps two resources whose hashes share a slot, instead of evicting one with the other', () => {
    // Two slots: every pair of resources shares one. With one slot per hash, about half of these
    // pairs would evict the first resource.
    for (let n = 0; n < 24; n++) {
      const cache = new ResourceCache(2, 1024);
      const first = remember(cache, 'host.name=node-a');
      const second = remember(cache, `host.name=node-${n}`);
      expect(lookup(cache, 'host.name=node-a')).toBe(first);
      expect(lookup(cache, `host.name=node-${n}`)).toBe(second);
    }
  });

  it('displaces the resource of the pair used less recently', () => {
    const cache = new ResourceCache(2, 1024);
    const busy = remember(cache, 'a');
    remember(cache, 'b');
    expect(lookup(cache, 'a')).toBe(busy);
    remember(cache, 'c');
    expect(lookup(cache, 'a')).toBe(busy);
    expect(lookup(cache, 'b')).toBeUndefined();
  });

  it('does not hold resources larger than its bound', () => {
    const cache = new ResourceCache(8, 4);
    remember(cache, 'longer than four bytes');
    expect(lookup(cache, 'longer than four bytes')).toBeUndefined();
  });
});
