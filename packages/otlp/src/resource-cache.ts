import type { AttributeValue, Resource } from './span.ts';

/**
 * Decoded resources by their encoded bytes, shared across one decoder's requests.
 *
 * A pipeline's payloads repeat the same few hundred resources (one per SDK instance), each with
 * a dozen or more attributes, in every batch: a Collector forwards dozens of them per request.
 * Decoding each once, and handing every later span the same frozen object, saves the decode and
 * lets per-resource work downstream (the attempt extractor's views) be cached by identity.
 *
 * Two-way: each hash has two candidate slots, and a resource displaces the one of the two used
 * less recently, so two busy resources whose hashes share a slot do not evict each other on every
 * request (with one slot per hash, 38 resources in 512 slots missed on 4% of lookups in the
 * bench's workload: each miss a full decode and a new object for the extractor to index). A hit
 * compares every byte, so a collision costs one ordinary decode, never a wrong resource.
 * Bounded: at most `slots` resources of at most `maxBytes` encoded bytes each are held; larger
 * resources are decoded every time.
 */
export class ResourceCache {
  private readonly slotMask: number;
  private readonly maxBytes: number;
  private readonly encoded: (Buffer | undefined)[];
  private readonly hashes: Int32Array;
  private readonly resources: (Resource | undefined)[];
  /** Per slot, when it last answered or was filled (a counter of lookups, not a clock). */
  private readonly used: Float64Array;
  private lookups = 0;

  constructor(slots: number, maxBytes: number) {
    if ((slots & (slots - 1)) !== 0) throw new RangeError(`slots must be a power of two, received ${slots}`);
    this.slotMask = slots - 1;
    this.maxBytes = maxBytes;
    this.encoded = new Array<Buffer | undefined>(slots).fill(undefined);
    this.hashes = new Int32Array(slots);
    this.resources = new Array<Resource | undefined>(slots).fill(undefined);
    this.used = new Float64Array(slots);
  }

  /** The resource decoded from `bytes[start, end)` (`view` over the same bytes) before, or undefined. */
  get(bytes: Uint8Array, view: DataView, start: number, end: number): Resource | undefined {
    if (end - start > this.maxBytes) return undefined;
    const hash = hashOf(bytes, view, start, end);
    const first = slotOf(hash, this.slotMask);
    const found =
      this.matching(first, hash, bytes, start, end) ??
      this.matching(otherSlot(first), hash, bytes, start, end);
    return found === undefined ? undefined : this.resources[found];
  }

  /** `slot` when it holds the resource encoded as `bytes[start, end)` (hash `hash`); marks it used. */
  private matching(
    slot: number,
    hash: number,
    bytes: Uint8Array,
    start: number,
    end: number,
  ): number | undefined {
    const stored = this.encoded[slot];
    if (stored === undefined || this.hashes[slot] !== hash || stored.length !== end - start) return undefined;
    // Native comparison: resources are hundreds of bytes.
    const candidate = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start);
    if (!candidate.equals(stored)) return undefined;
    this.used[slot] = ++this.lookups;
    return slot;
  }

  /**
   * Remembers `resource` as the decoding of `bytes[start, end)` and returns it frozen (deeply:
   * its attribute objects and arrays; byte values cannot be frozen and are copies anyway).
   */
  set(bytes: Uint8Array, view: DataView, start: number, end: number, resource: Resource): Resource {
    if (end - start > this.maxBytes) return resource;
    const hash = hashOf(bytes, view, start, end);
    const first = slotOf(hash, this.slotMask);
    const second = otherSlot(first);
    const slot = this.used[second]! < this.used[first]! ? second : first;
    this.used[slot] = ++this.lookups;
    deepFreeze(resource.attributes);
    this.encoded[slot] = Buffer.from(bytes.subarray(start, end));
    this.hashes[slot] = hash;
    this.resources[slot] = Object.freeze(resource);
    return resource;
  }
}

/**
 * Every byte counts, four at a time: resources of one fleet differ in a few bytes (host, pod,
 * instance id), so a sampled hash would send them all to one slot.
 */
function hashOf(bytes: Uint8Array, view: DataView, start: number, end: number): number {
  let hash = 0x811c9dc5 ^ (end - start);
  let i = start;
  for (const words = end - 3; i < words; i += 4) hash = Math.imul(hash ^ view.getInt32(i, true), 0x01000193);
  for (; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193);
  return hash ^ (hash >>> 15);
}

function slotOf(hash: number, mask: number): number {
  return (hash ^ (hash >>> 16)) & mask;
}

/** The second candidate slot: the neighbour within the same pair. */
function otherSlot(slot: number): number {
  return slot ^ 1;
}

function deepFreeze(value: AttributeValue): void {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return;
  Object.freeze(value);
  if (Array.isArray(value)) for (const item of value) deepFreeze(item);
  else for (const key in value) deepFreeze(value[key]!);
}
