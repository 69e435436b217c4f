import {
  type Attempt,
  type ClientAttempt,
  EFFECTS,
  OUTCOMES,
  type Placement,
  SCOPE_LEVELS,
  type ServerAttempt,
} from '@keyscope/attempts';
import { hexOf8, hexOf16 } from '@keyscope/otlp';

/**
 * Attempts as bytes, for the compact attempt log (compact-attempt-log.ts): records in chunks of one megabyte, each record
 * pointing back to the one before it of its list (a key's attempts), so that appending writes the
 * new record only, and a list costs its position and count. An object per attempt with its
 * strings and an entry of a Set of span ids costs several hundred bytes; a record about sixty.
 *
 * Names (tenants, operations, stores, targets) and placements are interned once and written as
 * numbers, outcomes, scopes and effects as their place in their closed lists; trace, span and
 * parent span ids as their bytes when they are lowercase hex of their usual length, else as text;
 * times as float64. Every string reads back unchanged (lone surrogates, '' and long ones alike)
 * and every number too (-0 and NaN included), and decoded attempts have their properties in the
 * order extraction creates them, so that they equal the appended ones whether compared deeply or
 * as JSON. A placement decodes to the first placement object appended that equals it (held, not
 * copied: extraction never changes one), so that decoded attempts have extraction's shapes.
 *
 * A record is `varint(distance back to the list's previous record, 0 for none)`, a head byte (kind
 * and how the ids and key are written), the trace and span ids, the parent span id, start and end,
 * the placement, operation, key (only when it is not the key given for the list), tenant, the
 * kind's own fields, then a flags byte. Positions are `chunk × CHUNK_BYTES + offset`. Not a format
 * to store or send elsewhere: it lives as long as these tables.
 */
export class AttemptRecords {
  #names: string[] = [];
  #nameIds = new Map<string, number>();
  #placements: Placement[] = [];
  #placementsByNode = new Map<string, number[]>();
  /** Placement objects already interned, so that extraction's shared objects are looked up by identity. */
  #placementCache = new WeakMap<Placement, number>();
  /** Consecutive attempts often share their placement object: the last one skips the WeakMap. */
  #lastPlacement: Placement | null = null;
  #lastPlacementId = 0;
  /** Chunks by index; a record larger than a chunk takes a chunk of its own and the indexes it spans. */
  #chunks: Buffer[] = [];
  /** A view of each chunk, for its float64s. */
  #views: DataView<ArrayBufferLike>[] = [];
  /** The chunk records are written to, its index, and where the next record goes in it. */
  #out: Buffer = EMPTY;
  #outView: DataView<ArrayBufferLike> = new DataView(EMPTY.buffer, 0, 0);
  #outIndex = -1;
  #at = 0;
  /** Where the last record written has its head byte and where its ids end. */
  #head = 0;
  #idsEnd = 0;
  #in: Buffer = EMPTY;
  #inView: DataView<ArrayBufferLike> = new DataView(EMPTY.buffer, 0, 0);
  #inAt = 0;

  /** Names and placements interned. */
  get tableSize(): number {
    return this.#names.length + this.#placements.length;
  }

  /** Bytes of chunks held. */
  get chunkBytes(): number {
    let bytes = 0;
    for (const chunk of this.#chunks) if (chunk !== undefined) bytes += chunk.length;
    return bytes;
  }

  /** Forgets every record, name and placement. */
  reset(): void {
    this.#names = [];
    this.#nameIds = new Map();
    this.#placements = [];
    this.#placementsByNode = new Map();
    this.#placementCache = new WeakMap();
    this.#lastPlacement = null;
    this.#chunks = [];
    this.#views = [];
    this.#out = EMPTY;
    this.#outIndex = -1;
    this.#at = 0;
  }

  /**
   * Writes the record of `attempt` after every other and returns its position; `previous` is the
   * position of the list's last record (NO_RECORD for none), `listKey` the key of the list,
   * written only when the attempt's own key differs. `unwrite` takes it back.
   */
  write(attempt: Attempt, listKey: string, previous: number): number {
    const ownKey = attempt.key !== listKey;
    this.#room(attempt, ownKey);
    const position = this.#outIndex * CHUNK_BYTES + this.#at;
    this.#varint(previous === NO_RECORD ? 0 : position - previous);
    const head = this.#at++;
    this.#head = head;
    let textIds = false;
    if (!(this.#hex(attempt.traceId, 16) && this.#hex(attempt.spanId, 8))) {
      textIds = true;
      this.#at = head + 1;
      this.#text(attempt.traceId);
      this.#text(attempt.spanId);
    }
    this.#idsEnd = this.#at;
    const parent = attempt.parentSpanId;
    let parentForm = PARENT_NONE;
    if (parent !== '') {
      parentForm = PARENT_HEX;
      if (!this.#hex(parent, 8)) {
        parentForm = PARENT_TEXT;
        this.#text(parent);
      }
    }
    this.#out[head] =
      KIND[attempt.kind] | (textIds ? TEXT_IDS : 0) | (parentForm << 3) | (ownKey ? OWN_KEY : 0);
    this.#float(attempt.startUnixMillis);
    this.#float(attempt.endUnixMillis);
    this.#varint(this.#placementId(attempt.placement));
    this.#varint(this.#nameId(attempt.operation));
    if (ownKey) this.#text(attempt.key);
    this.#varint(this.#nameId(attempt.tenant));
    let flags = 0;
    switch (attempt.kind) {
      case 'server':
        this.#varint(this.#closedId(attempt.outcome, OUTCOMES));
        this.#varint(this.#nameId(attempt.store));
        this.#varint(this.#closedId(attempt.scope, SCOPES));
        this.#result(attempt);
        flags =
          resultFlags(attempt) |
          (attempt.effectSpansDeclared ? EFFECT_SPANS_DECLARED : 0) |
          (attempt.outcomeFrom === 'http' ? OUTCOME_FROM_HTTP : 0);
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
    return position;
  }

  /** Takes back the record just written at `position`, as if it never was. */
  unwrite(position: number): void {
    this.#at = position - this.#outIndex * CHUNK_BYTES;
  }

  /** Bytes of the record just written at `position`. */
  writtenBytes(position: number): number {
    return this.#outIndex * CHUNK_BYTES + this.#at - position;
  }

  /** The position of the record before the one at `position` in its list, or NO_RECORD. */
  previous(position: number): number {
    const chunk = this.#chunks[Math.floor(position / CHUNK_BYTES)]!;
    let at = position % CHUNK_BYTES;
    let byte = chunk[at++]!;
    if (byte === 0) return NO_RECORD;
    let distance = byte & 0x7f;
    for (let scale = 0x80; byte >= 0x80; scale *= 0x80) {
      byte = chunk[at++]!;
      distance += (byte & 0x7f) * scale;
    }
    return position - distance;
  }

  /** Whether the record at `position` has the trace and span ids of the record just written. */
  sameIdsAsWritten(position: number): boolean {
    const chunk = this.#chunks[Math.floor(position / CHUNK_BYTES)]!;
    let at = position % CHUNK_BYTES;
    while (chunk[at]! >= 0x80) at++;
    at++;
    const out = this.#out;
    const head = this.#head;
    // Ids are written the same way only as the same form (bytes or texts, each prefix-free), so
    // comparing the new record's id bytes decides, and never reads past the other record.
    if ((chunk[at]! & TEXT_IDS) !== (out[head]! & TEXT_IDS)) return false;
    const length = this.#idsEnd - head;
    // Attempts of one key often share their trace: the span id tells them apart sooner.
    if ((out[head]! & TEXT_IDS) === 0)
      for (let i = 17; i < 25; i++) if (chunk[at + i] !== out[head + i]) return false;
    for (let i = 1; i < length; i++) if (chunk[at + i] !== out[head + i]) return false;
    return true;
  }

  /**
   * The trace and span ids of the record at `position` as written, tagged with their form: two
   * records have the same identity exactly when their attempts have the same ids.
   */
  identityOf(position: number): string {
    const chunk = this.#chunks[Math.floor(position / CHUNK_BYTES)]!;
    let at = position % CHUNK_BYTES;
    while (chunk[at]! >= 0x80) at++;
    at++;
    const head = chunk[at++]!;
    if ((head & TEXT_IDS) === 0) return ID_TAG_HEX + chunk.toString('latin1', at, at + 24);
    this.#in = chunk;
    this.#inAt = at;
    this.#readText();
    this.#readText();
    return ID_TAG_TEXT + chunk.toString('latin1', at, this.#inAt);
  }

  /** The attempt of the record at `position`; `listKey` as it was written with. */
  read(position: number, listKey: string): Attempt {
    const index = Math.floor(position / CHUNK_BYTES);
    this.#in = this.#chunks[index]!;
    this.#inView = this.#views[index]!;
    this.#inAt = position % CHUNK_BYTES;
    this.#readVarint();
    return this.#attempt(listKey);
  }

  /**
   * Makes room in the current chunk for the attempt's record, at most what its texts can take
   * (two bytes a character, a varint each) and FIXED_BYTES besides.
   */
  #room(attempt: Attempt, ownKey: boolean): void {
    let texts = attempt.traceId.length + attempt.spanId.length + attempt.parentSpanId.length;
    if (ownKey) texts += attempt.key.length;
    if (attempt.kind === 'server' || attempt.kind === 'arrival') texts += attempt.businessId.length;
    else if (attempt.kind === 'client') texts += attempt.error.length;
    const bound = FIXED_BYTES + 2 * texts;
    // Positions address CHUNK_BYTES a chunk: only a record that starts a chunk may go past it.
    if (this.#at + bound <= Math.min(this.#out.length, CHUNK_BYTES)) return;
    // A new chunk after the last, or after every index the last one spans.
    const index = this.#outIndex + Math.max(1, Math.ceil(this.#out.length / CHUNK_BYTES));
    this.#out = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, bound));
    this.#outView = new DataView(this.#out.buffer, this.#out.byteOffset, this.#out.length);
    this.#chunks[index] = this.#out;
    this.#views[index] = this.#outView;
    this.#outIndex = index;
    this.#at = 0;
  }

  #attempt(listKey: string): Attempt {
    const head = this.#readByte();
    let traceId: string;
    let spanId: string;
    if ((head & TEXT_IDS) === 0) {
      traceId = hexOf16(this.#in, this.#inAt);
      spanId = hexOf8(this.#in, this.#inAt + 16);
      this.#inAt += 24;
    } else {
      traceId = this.#readText();
      spanId = this.#readText();
    }
    const parentForm = (head >> 3) & 3;
    let parentSpanId = '';
    if (parentForm === PARENT_HEX) {
      parentSpanId = hexOf8(this.#in, this.#inAt);
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
        const outcome = this.#readClosed(OUTCOMES) as ServerAttempt['outcome'];
        const store = this.#readName();
        const scope = this.#readClosed(SCOPES) as ServerAttempt['scope'];
        const statusCode = this.#readNumber();
        const effect = this.#readClosed(STATED_EFFECTS) as ServerAttempt['effect'];
        const businessId = this.#readText();
        const flags = this.#readByte();
        const server: ServerAttempt = {
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
        if ((flags & OUTCOME_FROM_HTTP) !== 0) server.outcomeFrom = 'http';
        return server;
      }
      case KIND.arrival: {
        const statusCode = this.#readNumber();
        const effect = this.#readClosed(STATED_EFFECTS) as ServerAttempt['effect'];
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

  /**
   * `id` as its bytes when it is `bytes` × 2 lowercase hex digits (what decodeTraces makes of ids,
   * and what hex decoding gives back); false, with nothing written, otherwise.
   */
  #hex(id: string, bytes: number): boolean {
    if (id.length !== 2 * bytes) return false;
    const out = this.#out;
    const at = this.#at;
    for (let i = 0; i < bytes; i++) {
      const high = id.charCodeAt(2 * i);
      const low = id.charCodeAt(2 * i + 1);
      if ((high | low) > 0xff) return false;
      const value = HEX_PAIRS[(high << 8) | low]!;
      if (value < 0) return false;
      out[at + i] = value;
    }
    this.#at = at + bytes;
    return true;
  }

  #result(attempt: Pick<ServerAttempt, 'statusCode' | 'effect' | 'businessId'>): void {
    this.#number(attempt.statusCode);
    this.#varint(this.#closedId(attempt.effect, STATED_EFFECTS));
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

  /** A value of a closed list as its index; anything else (the types allow none) as a name after them. */
  #closedId(value: string, list: readonly string[]): number {
    for (let i = 0; i < list.length; i++) if (list[i] === value) return i;
    return list.length + this.#nameId(value);
  }

  #placementId(placement: Placement): number {
    if (placement === this.#lastPlacement) return this.#lastPlacementId;
    const id = this.#internPlacement(placement);
    this.#lastPlacement = placement;
    this.#lastPlacementId = id;
    return id;
  }

  #internPlacement(placement: Placement): number {
    const cached = this.#placementCache.get(placement);
    if (cached !== undefined) return cached;
    const { service, node, cluster, region, zone } = placement;
    // Placements are told apart by their node name almost always: a list per node, compared field by field.
    let ids = this.#placementsByNode.get(node);
    if (ids === undefined) this.#placementsByNode.set(node, (ids = []));
    let id = -1;
    for (const known of ids) {
      const p = this.#placements[known]!;
      if (p.service === service && p.cluster === cluster && p.region === region && p.zone === zone) {
        id = known;
        break;
      }
    }
    if (id === -1) {
      id = this.#placements.length;
      // The first such object, not a copy: decoded attempts then have the shapes extraction gave them,
      // so that the detector's code reading attempts stays monomorphic.
      this.#placements.push(placement);
      ids.push(id);
    }
    this.#placementCache.set(placement, id);
    return id;
  }

  // Nothing checks for room: `#room` made it for the whole record.
  #byte(value: number): void {
    this.#out[this.#at++] = value;
  }

  #varint(value: number): void {
    const out = this.#out;
    let at = this.#at;
    let rest = value;
    while (rest >= 0x80) {
      out[at++] = (rest & 0x7f) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    out[at++] = rest;
    this.#at = at;
  }

  #float(value: number): void {
    this.#outView.setFloat64(this.#at, value, true);
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
    // Both write code units as they are: a lone surrogate stays one (UTF-8 would replace it).
    this.#at += this.#out.write(text, this.#at, twoByte ? 'utf16le' : 'latin1');
  }

  #readByte(): number {
    return this.#in[this.#inAt++]!;
  }

  #readVarint(): number {
    const input = this.#in;
    let byte = input[this.#inAt++]!;
    let value = byte & 0x7f;
    for (let scale = 0x80; byte >= 0x80; scale *= 0x80) {
      byte = input[this.#inAt++]!;
      value += (byte & 0x7f) * scale;
    }
    return value;
  }

  #readFloat(): number {
    const value = this.#inView.getFloat64(this.#inAt, true);
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

  #readClosed(list: readonly string[]): string {
    const id = this.#readVarint();
    return id < list.length ? list[id]! : this.#names[id - list.length]!;
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

/** The position of no record: what a list's first record points back to. */
export const NO_RECORD = -1;
const CHUNK_BYTES = 1 << 20;
const EMPTY = Buffer.alloc(0);
const KIND = { server: 0, arrival: 1, client: 2, effect: 3 } as const;
/** The closed lists written as their index (OUTCOMES is @keyscope/attempts' own), '' (not stated) included. */
const SCOPES: readonly string[] = ['', ...SCOPE_LEVELS];
const STATED_EFFECTS: readonly string[] = ['', ...EFFECTS];
/**
 * More than the fields of a fixed size a record has: its back pointer, head, ids and parent as
 * bytes, two float64s, seven varints, two numbers as float64, the flags byte, six texts' lengths.
 */
const FIXED_BYTES = 160;
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
const OUTCOME_FROM_HTTP = 16;
/** Identities start with a tag in place of the head byte, which carries more than how ids are written. */
const ID_TAG_HEX = 'h';
const ID_TAG_TEXT = 't';

function resultFlags(attempt: Pick<ServerAttempt, 'failed' | 'released'>): number {
  return (attempt.failed ? FAILED : 0) | (attempt.released ? RELEASED : 0);
}

/** Bytes of two lowercase hex digits by their character codes (high << 8 | low), -1 for anything else. */
const HEX_PAIRS = (() => {
  const digits = '0123456789abcdef';
  const pairs = new Int16Array(1 << 16).fill(-1);
  for (let high = 0; high < 16; high++)
    for (let low = 0; low < 16; low++)
      pairs[(digits.charCodeAt(high) << 8) | digits.charCodeAt(low)] = (high << 4) | low;
  return pairs;
})();
