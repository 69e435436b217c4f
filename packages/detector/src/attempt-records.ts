import type { Attempt, ClientAttempt, Placement, ServerAttempt } from '@keyscope/attempts';

/**
 * Attempts as bytes, for the memory attempt log to keep a key's attempts in one Latin-1 string
 * (a string costs 16 bytes besides its characters; an object per attempt, its strings and an
 * entry of a Set of span ids cost several hundred).
 *
 * Names (tenants, operations, outcomes, stores, scopes, effects, targets) and placements are
 * interned once per codec and written as numbers; trace, span and parent span ids as their bytes
 * when they are lowercase hex of their usual length, else as text; times as float64. Every string
 * reads back unchanged (lone surrogates, '' and long ones alike) and every number too (-0 and
 * NaN included), and decoded attempts have their properties in the order extraction creates
 * them, so that they equal the appended ones whether compared deeply or as JSON. A placement
 * decodes to one frozen object per distinct placement.
 *
 * A record is `varint(body length)` then the body: a head byte (kind and how the ids and key are
 * written), the trace and span ids (see `identityOf`), the parent span id, start and end, the
 * placement, operation, key (only when it is not the key given for the record's whole list),
 * tenant, the kind's own fields, then a flags byte. Not a format to store or send elsewhere:
 * it lives as long as the codec's tables.
 */
export class AttemptRecordCodec {
  #names: string[] = [];
  #nameIds = new Map<string, number>();
  #placements: Placement[] = [];
  #placementIds = new Map<string, number>();
  /** Placement objects already interned, so that extraction's shared objects are looked up by identity. */
  #placementCache = new WeakMap<Placement, number>();
  #out = Buffer.allocUnsafe(1024);
  #at = 0;
  #in = Buffer.allocUnsafe(4096);
  #inAt = 0;

  /** Names and placements interned: what `compact` is measured by. */
  get tableSize(): number {
    return this.#names.length + this.#placements.length;
  }

  /** Forgets every name and placement: records encoded before no longer decode. */
  reset(): void {
    this.#names = [];
    this.#nameIds = new Map();
    this.#placements = [];
    this.#placementIds = new Map();
    this.#placementCache = new WeakMap();
  }

  /**
   * The record of `attempt` (see the class comment); `listKey` is the key of the list it joins,
   * written only when the attempt's own key differs. `identityOf` then reads its ids.
   */
  encode(attempt: Attempt, listKey: string): string {
    this.#at = 0;
    this.#reserve(64);
    // The body length goes in front once known: leave one byte, move the body if it needs more.
    this.#at = 1;
    const hexIds = isHex(attempt.traceId, 32) && isHex(attempt.spanId, 16);
    const parent = attempt.parentSpanId;
    const parentForm = parent === '' ? PARENT_NONE : isHex(parent, 16) ? PARENT_HEX : PARENT_TEXT;
    const ownKey = attempt.key !== listKey;
    this.#byte(KIND[attempt.kind] | (hexIds ? 0 : TEXT_IDS) | (parentForm << 3) | (ownKey ? OWN_KEY : 0));
    if (hexIds) {
      this.#out.write(attempt.traceId, this.#at, 16, 'hex');
      this.#out.write(attempt.spanId, this.#at + 16, 8, 'hex');
      this.#at += 24;
    } else {
      this.#text(attempt.traceId);
      this.#text(attempt.spanId);
    }
    if (parentForm === PARENT_HEX) {
      this.#out.write(parent, this.#at, 8, 'hex');
      this.#at += 8;
    } else if (parentForm === PARENT_TEXT) this.#text(parent);
    this.#float(attempt.startUnixMillis);
    this.#float(attempt.endUnixMillis);
    this.#varint(this.#placementId(attempt.placement));
    this.#varint(this.#nameId(attempt.operation));
    if (ownKey) this.#text(attempt.key);
    this.#varint(this.#nameId(attempt.tenant));
    let flags = 0;
    switch (attempt.kind) {
      case 'server':
        this.#varint(this.#nameId(attempt.outcome));
        this.#varint(this.#nameId(attempt.store));
        this.#varint(this.#nameId(attempt.scope));
        this.#result(attempt);
        flags = resultFlags(attempt) | (attempt.effectSpansDeclared ? EFFECT_SPANS_DECLARED : 0);
        break;
      case 'arrival':
        this.#result(attempt);
        flags = resultFlags(attempt);
        break;
      case 'client':
        this.#number(attempt.resendCount);
        this.#varint(this.#nameId(attempt.target));
        this.#number(attempt.statusCode);
        // Errors are texts: a status message may name the request it failed.
        this.#text(attempt.error);
        flags = attempt.keyFrom === 'child' ? KEY_FROM_CHILD : 0;
        break;
      case 'effect':
        flags = attempt.failed ? FAILED : 0;
        break;
    }
    this.#byte(flags);
    const body = this.#at - 1;
    if (body < 0x80) {
      this.#out[0] = body;
      return this.#out.toString('latin1', 0, this.#at);
    }
    // Rare (long keys or texts): the length takes more bytes than the one left for it.
    const prefix = varintBytes(body);
    this.#reserve(prefix);
    this.#out.copy(this.#out, prefix, 1, this.#at);
    const end = this.#at - 1 + prefix;
    this.#at = 0;
    this.#varint(body);
    return this.#out.toString('latin1', 0, end);
  }

  /**
   * What makes the record at `start` of `records` (or a record just encoded, at 0) the same span
   * as another: its trace and span ids as written, tagged with how they are written, so that two
   * records have the same identity exactly when their attempts have the same ids.
   */
  identityOf(records: string, start: number): string {
    let at = start;
    while (records.charCodeAt(at) >= 0x80) at++;
    at++;
    const head = records.charCodeAt(at++);
    if ((head & TEXT_IDS) === 0) return ID_TAG_HEX + records.slice(at, at + 24);
    let end = at;
    for (let i = 0; i < 2; i++) {
      let header = 0;
      for (let shift = 0; ; shift += 7) {
        const byte = records.charCodeAt(end++);
        header += (byte & 0x7f) * 2 ** shift;
        if (byte < 0x80) break;
      }
      end += Math.floor(header / 2) * (header % 2 === 1 ? 2 : 1);
    }
    return ID_TAG_TEXT + records.slice(at, end);
  }

  /** Whether the record at `start` of `records` has `identity` (as `identityOf` gives it). */
  hasIdentity(records: string, start: number, identity: string): boolean {
    let at = start;
    while (records.charCodeAt(at) >= 0x80) at++;
    at++;
    const textIds = (records.charCodeAt(at) & TEXT_IDS) !== 0;
    if (textIds !== (identity.charCodeAt(0) === TAG_TEXT_CODE)) return false;
    for (let i = 1; i < identity.length; i++)
      if (records.charCodeAt(at + i) !== identity.charCodeAt(i)) return false;
    return true;
  }

  /** Where the record after the one at `start` begins. */
  static next(records: string, start: number): number {
    let at = start;
    let body = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = records.charCodeAt(at++);
      body += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return at + body;
    }
  }

  /** The attempts of `records` (whole records, as `encode` returned them) in order, onto `into`. */
  decodeInto(records: string, listKey: string, into: Attempt[]): void {
    if (this.#in.length < records.length)
      this.#in = Buffer.allocUnsafe(Math.max(records.length, 2 * this.#in.length));
    const end = this.#in.write(records, 0, 'latin1');
    this.#inAt = 0;
    while (this.#inAt < end) {
      this.#readVarint();
      into.push(this.#attempt(listKey));
    }
  }

  #attempt(listKey: string): Attempt {
    const head = this.#readByte();
    let traceId: string;
    let spanId: string;
    if ((head & TEXT_IDS) === 0) {
      traceId = this.#in.toString('hex', this.#inAt, this.#inAt + 16);
      spanId = this.#in.toString('hex', this.#inAt + 16, this.#inAt + 24);
      this.#inAt += 24;
    } else {
      traceId = this.#readText();
      spanId = this.#readText();
    }
    const parentForm = (head >> 3) & 3;
    let parentSpanId = '';
    if (parentForm === PARENT_HEX) {
      parentSpanId = this.#in.toString('hex', this.#inAt, this.#inAt + 8);
      this.#inAt += 8;
    } else if (parentForm === PARENT_TEXT) parentSpanId = this.#readText();
    const startUnixMillis = this.#readFloat();
    const endUnixMillis = this.#readFloat();
    const placement = this.#placements[this.#readVarint()]!;
    const operation = this.#readName();
    const key = (head & OWN_KEY) !== 0 ? this.#readText() : listKey;
    const tenant = this.#readName();
    switch (head & KIND_MASK) {
      case KIND.server: {
        const outcome = this.#readName() as ServerAttempt['outcome'];
        const store = this.#readName();
        const scope = this.#readName() as ServerAttempt['scope'];
        const statusCode = this.#readNumber();
        const effect = this.#readName() as ServerAttempt['effect'];
        const businessId = this.#readText();
        const flags = this.#readByte();
        return {
          kind: 'server',
          key,
          tenant,
          traceId,
          spanId,
          parentSpanId,
          startUnixMillis,
          endUnixMillis,
          placement,
          operation,
          outcome,
          store,
          scope,
          statusCode,
          failed: (flags & FAILED) !== 0,
          effect,
          released: (flags & RELEASED) !== 0,
          businessId,
          effectSpansDeclared: (flags & EFFECT_SPANS_DECLARED) !== 0,
        };
      }
      case KIND.arrival: {
        const statusCode = this.#readNumber();
        const effect = this.#readName() as ServerAttempt['effect'];
        const businessId = this.#readText();
        const flags = this.#readByte();
        return {
          kind: 'arrival',
          key,
          tenant,
          traceId,
          spanId,
          parentSpanId,
          startUnixMillis,
          endUnixMillis,
          placement,
          operation,
          statusCode,
          failed: (flags & FAILED) !== 0,
          effect,
          released: (flags & RELEASED) !== 0,
          businessId,
        };
      }
      case KIND.client: {
        const resendCount = this.#readNumber();
        const target = this.#readName();
        const statusCode = this.#readNumber();
        const error = this.#readText();
        const attempt: ClientAttempt = {
          kind: 'client',
          key,
          tenant,
          traceId,
          spanId,
          parentSpanId,
          startUnixMillis,
          endUnixMillis,
          placement,
          operation,
          resendCount,
          target,
          statusCode,
          error,
        };
        if ((this.#readByte() & KEY_FROM_CHILD) !== 0) attempt.keyFrom = 'child';
        return attempt;
      }
      default:
        return {
          kind: 'effect',
          key,
          tenant,
          traceId,
          spanId,
          parentSpanId,
          startUnixMillis,
          endUnixMillis,
          placement,
          operation,
          failed: (this.#readByte() & FAILED) !== 0,
        };
    }
  }

  #result(attempt: Pick<ServerAttempt, 'statusCode' | 'effect' | 'businessId'>): void {
    this.#number(attempt.statusCode);
    this.#varint(this.#nameId(attempt.effect));
    this.#text(attempt.businessId);
  }

  #nameId(name: string): number {
    let id = this.#nameIds.get(name);
    if (id === undefined) {
      id = this.#names.length;
      this.#names.push(name);
      this.#nameIds.set(name, id);
    }
    return id;
  }

  #placementId(placement: Placement): number {
    const cached = this.#placementCache.get(placement);
    if (cached !== undefined) return cached;
    const { service, node, cluster, region, zone } = placement;
    const content = `${service.length}:${service}${node.length}:${node}${cluster.length}:${cluster}${region.length}:${region}${zone}`;
    let id = this.#placementIds.get(content);
    if (id === undefined) {
      id = this.#placements.length;
      this.#placements.push(Object.freeze({ ...placement }));
      this.#placementIds.set(content, id);
    }
    this.#placementCache.set(placement, id);
    return id;
  }

  #reserve(bytes: number): void {
    if (this.#at + bytes <= this.#out.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.#out.length, this.#at + bytes));
    this.#out.copy(grown, 0, 0, this.#at);
    this.#out = grown;
  }

  #byte(value: number): void {
    this.#reserve(1);
    this.#out[this.#at++] = value;
  }

  #varint(value: number): void {
    this.#reserve(8);
    let rest = value;
    while (rest >= 0x80) {
      this.#out[this.#at++] = (rest & 0x7f) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.#out[this.#at++] = rest;
  }

  #float(value: number): void {
    this.#reserve(8);
    this.#out.writeDoubleLE(value, this.#at);
    this.#at += 8;
  }

  /** Small non-negative integers (status codes, resend counts) as a varint of value + 1; others as 0 then a float64. */
  #number(value: number): void {
    if (Number.isInteger(value) && value >= 0 && value < 2 ** 31 && !Object.is(value, -0))
      this.#varint(value + 1);
    else {
      this.#byte(0);
      this.#float(value);
    }
  }

  /** `varint(length × 2 + (two bytes a character ? 1 : 0))`, then the code units as they are. */
  #text(text: string): void {
    const length = text.length;
    let twoByte = false;
    for (let i = 0; i < length; i++) {
      if (text.charCodeAt(i) > 0xff) {
        twoByte = true;
        break;
      }
    }
    this.#varint(length * 2 + (twoByte ? 1 : 0));
    if (length === 0) return;
    this.#reserve(twoByte ? 2 * length : length);
    // Both write code units as they are: a lone surrogate stays one (UTF-8 would replace it).
    this.#at += this.#out.write(text, this.#at, twoByte ? 'utf16le' : 'latin1');
  }

  #readByte(): number {
    return this.#in[this.#inAt++]!;
  }

  #readVarint(): number {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = this.#in[this.#inAt++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  }

  #readFloat(): number {
    const value = this.#in.readDoubleLE(this.#inAt);
    this.#inAt += 8;
    return value;
  }

  #readNumber(): number {
    const value = this.#readVarint();
    return value === 0 ? this.#readFloat() : value - 1;
  }

  #readName(): string {
    return this.#names[this.#readVarint()]!;
  }

  #readText(): string {
    const header = this.#readVarint();
    const length = Math.floor(header / 2);
    if (length === 0) return '';
    const start = this.#inAt;
    if (header % 2 === 1) {
      this.#inAt += 2 * length;
      return this.#in.toString('utf16le', start, this.#inAt);
    }
    this.#inAt += length;
    return this.#in.toString('latin1', start, this.#inAt);
  }
}

const KIND = { server: 0, arrival: 1, client: 2, effect: 3 } as const;
const KIND_MASK = 3;
/** Head bits besides the kind. */
const TEXT_IDS = 4;
const PARENT_NONE = 0;
const PARENT_HEX = 1;
const PARENT_TEXT = 2;
const OWN_KEY = 32;
/** Flags byte. */
const FAILED = 1;
const RELEASED = 2;
const EFFECT_SPANS_DECLARED = 4;
const KEY_FROM_CHILD = 8;
/** Identities start with a tag in place of the head byte, which carries more than how ids are written. */
const ID_TAG_HEX = 'h';
const ID_TAG_TEXT = 't';
const TAG_TEXT_CODE = 0x74;

function resultFlags(attempt: Pick<ServerAttempt, 'failed' | 'released'>): number {
  return (attempt.failed ? FAILED : 0) | (attempt.released ? RELEASED : 0);
}

function varintBytes(value: number): number {
  let bytes = 1;
  for (let rest = value; rest >= 0x80; rest = Math.floor(rest / 0x80)) bytes++;
  return bytes;
}

/** `length` lowercase hex digits: what decodeTraces makes of ids, and what hex decoding gives back. */
function isHex(id: string, length: number): boolean {
  if (id.length !== length) return false;
  for (let i = 0; i < length; i++) {
    const c = id.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return true;
}
