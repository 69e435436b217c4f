import {
  ATTEMPT_FIELDS,
  ATTEMPT_KINDS,
  type Attempt,
  type AttemptKind,
  attemptLiteral,
  compileFunction,
  literal,
  type Placement,
} from '@keyscope/attempts';
import { hexOf8, hexOf16 } from '@keyscope/otlp';

/**
 * Attempts as bytes, for the compact attempt log (compact-attempt-log.ts): records in chunks of one megabyte, each record
 * pointing back to the one before it of its list (a key's attempts), so that appending writes the
 * new record only, and a list costs its position and count. An object per attempt with its
 * strings and an entry of a Set of span ids costs several hundred bytes; a record about sixty.
 *
 * Fields are written as the attempt table carries them (`ATTEMPT_FIELDS`, attempt-schema.ts), by
 * code generated from it: names (tenants, operations, stores, targets) and placements are interned
 * once and written as numbers, closed values (outcomes, scopes, effects) as their place in their
 * lists; ids as their bytes when they are lowercase hex of their usual length, else as text; times
 * as float64; flags as bits of one byte. Every string reads back unchanged (lone surrogates, '' and long ones alike)
 * and every number too (-0 and NaN included), and decoded attempts have their properties in the
 * table's order (attempt-schema.ts), so that they equal the appended ones whether compared deeply or
 * as JSON. A placement decodes to the first placement object appended that equals it (held, not
 * copied: extraction never changes one), so that decoded attempts have extraction's shapes.
 *
 * A record is `varint(distance back to the list's previous record, 0 for none)`, a head byte (kind
 * and how the ids and key are written, see HEAD), the trace and span ids (the attempt's identity),
 * then the kind's other fields in the table's order, the key only when it is not the key given for
 * the list, then a flags byte. Positions are `chunk × CHUNK_BYTES + offset`. Not a format
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
    this.varint(previous === NO_RECORD ? 0 : position - previous);
    const head = this.#at++;
    this.#head = head;
    let textIds = false;
    if (!(this.#hex(attempt.traceId, 16) && this.#hex(attempt.spanId, 8))) {
      textIds = true;
      this.#at = head + 1;
      this.text(attempt.traceId);
      this.text(attempt.spanId);
    }
    this.#idsEnd = this.#at;
    this.#out[head] = KIND[attempt.kind] | (textIds ? TEXT_IDS : 0) | (ownKey ? OWN_KEY : 0);
    WRITE[attempt.kind](attempt, this, ownKey);
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
    this.readText();
    this.readText();
    return ID_TAG_TEXT + chunk.toString('latin1', at, this.#inAt);
  }

  /** The attempt of the record at `position`; `listKey` as it was written with. */
  read(position: number, listKey: string): Attempt {
    const index = Math.floor(position / CHUNK_BYTES);
    this.#in = this.#chunks[index]!;
    this.#inView = this.#views[index]!;
    this.#inAt = position % CHUNK_BYTES;
    this.readVarint();
    return this.#attempt(listKey);
  }

  /**
   * Makes room in the current chunk for the attempt's record, at most what its texts can take
   * (two bytes a character) and FIXED_BYTES besides.
   */
  #room(attempt: Attempt, ownKey: boolean): void {
    const bound = FIXED_BYTES[attempt.kind] + 2 * TEXT_LENGTH[attempt.kind](attempt, ownKey);
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
    const head = this.readByte();
    let traceId: string;
    let spanId: string;
    if ((head & TEXT_IDS) === 0) {
      traceId = hexOf16(this.#in, this.#inAt);
      spanId = hexOf8(this.#in, this.#inAt + 16);
      this.#inAt += 24;
    } else {
      traceId = this.readText();
      spanId = this.readText();
    }
    return READ[head & KIND_MASK]!(this, head, listKey, traceId, spanId);
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

  // What the code generated from the table (WRITE, READ) calls: nothing checks for room, `#room`
  // made it for the whole record.

  /** An id other than the identity: as bytes, text or nothing, its form in the head byte at `shift`. */
  id(id: string, bytes: number, shift: number): void {
    let form = ID_NONE;
    if (id !== '') {
      form = ID_HEX;
      if (!this.#hex(id, bytes)) {
        form = ID_TEXT;
        this.text(id);
      }
    }
    this.#out[this.#head]! |= form << shift;
  }

  readId(head: number, bytes: number, shift: number): string {
    const form = (head >> shift) & 3;
    if (form === ID_NONE) return '';
    if (form === ID_TEXT) return this.readText();
    const id = bytes === 8 ? hexOf8(this.#in, this.#inAt) : hexOf16(this.#in, this.#inAt);
    this.#inAt += bytes;
    return id;
  }

  nameId(name: string): number {
    let id = this.#nameIds.get(name);
    if (id === undefined) {
      id = this.#names.length;
      this.#names.push(name);
      this.#nameIds.set(name, id);
    }
    return id;
  }

  /** A value of a closed list as its index; anything else (the types allow none) as a name after them. */
  closedId(value: string, list: readonly string[]): number {
    for (let i = 0; i < list.length; i++) if (list[i] === value) return i;
    return list.length + this.nameId(value);
  }

  placementId(placement: Placement): number {
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

  byte(value: number): void {
    this.#out[this.#at++] = value;
  }

  varint(value: number): void {
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

  float(value: number): void {
    this.#outView.setFloat64(this.#at, value, true);
    this.#at += 8;
  }

  /** Small non-negative integers (status codes, resend counts) as a varint of value + 1; others as 0 then a float64. */
  number(value: number): void {
    if (Number.isInteger(value) && value >= 0 && value < 2 ** 31 && !Object.is(value, -0))
      this.varint(value + 1);
    else {
      this.byte(0);
      this.float(value);
    }
  }

  /** `varint(length × 2 + (two bytes a character ? 1 : 0))`, then the code units as they are. */
  text(text: string): void {
    const length = text.length;
    let twoByte = false;
    for (let i = 0; i < length; i++) {
      if (text.charCodeAt(i) > 0xff) {
        twoByte = true;
        break;
      }
    }
    this.varint(length * 2 + (twoByte ? 1 : 0));
    if (length === 0) return;
    // Both write code units as they are: a lone surrogate stays one (UTF-8 would replace it).
    this.#at += this.#out.write(text, this.#at, twoByte ? 'utf16le' : 'latin1');
  }

  readByte(): number {
    return this.#in[this.#inAt++]!;
  }

  readVarint(): number {
    const input = this.#in;
    let byte = input[this.#inAt++]!;
    let value = byte & 0x7f;
    for (let scale = 0x80; byte >= 0x80; scale *= 0x80) {
      byte = input[this.#inAt++]!;
      value += (byte & 0x7f) * scale;
    }
    return value;
  }

  readFloat(): number {
    const value = this.#inView.getFloat64(this.#inAt, true);
    this.#inAt += 8;
    return value;
  }

  readNumber(): number {
    const value = this.readVarint();
    return value === 0 ? this.readFloat() : value - 1;
  }

  placementAt(id: number): Placement {
    return this.#placements[id]!;
  }

  readName(): string {
    return this.#names[this.readVarint()]!;
  }

  readClosed(list: readonly string[]): string {
    const id = this.readVarint();
    return id < list.length ? list[id]! : this.#names[id - list.length]!;
  }

  readText(): string {
    const header = this.readVarint();
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
const KIND: Readonly<Record<AttemptKind, number>> = { server: 0, arrival: 1, client: 2, effect: 3 };
const KIND_MASK = 3;
/**
 * The head byte: the kind (bits 0–1), whether the identity is written as texts (TEXT_IDS), whether
 * the key is (OWN_KEY), then how each further id field is written (2 bits each from ID_SHIFT:
 * ID_NONE, ID_HEX or ID_TEXT).
 */
const TEXT_IDS = 4;
const OWN_KEY = 8;
const ID_SHIFT = 4;
const ID_NONE = 0;
const ID_HEX = 1;
const ID_TEXT = 2;
/** The fields written in the head, before the others: the attempt's identity. */
const IDENTITY: ReadonlySet<string> = new Set(['traceId', 'spanId']);
/** Identities start with a tag in place of the head byte, which carries more than how ids are written. */
const ID_TAG_HEX = 'h';
const ID_TAG_TEXT = 't';

type WriteFields = (attempt: Attempt, records: AttemptRecords, ownKey: boolean) => void;
type ReadFields = (
  records: AttemptRecords,
  head: number,
  listKey: string,
  traceId: string,
  spanId: string,
) => Attempt;

/**
 * A kind's record, generated from its fields in the table: each field's write and read, and what
 * its record may take at most besides two bytes a character of its texts (TEXT_LENGTH).
 */
function recordOf(kind: AttemptKind): {
  write: WriteFields;
  read: ReadFields;
  fixedBytes: number;
  textLength: (attempt: Attempt, ownKey: boolean) => number;
} {
  const fields = ATTEMPT_FIELDS[kind];
  const lists: (readonly string[])[] = [];
  const writes: string[] = [];
  const reads: string[] = [];
  const texts: string[] = [];
  const values: string[] = [];
  // Back pointer, head, identity as bytes, flags.
  let fixedBytes = 10 + 1 + 24 + 1;
  let idShift = ID_SHIFT;
  let bit = 0;
  const bits: string[] = [];
  fields.forEach((field, i) => {
    const value = `a.${field.name}`;
    const v = `v${i}`;
    if (IDENTITY.has(field.name)) {
      values.push(field.name);
      texts.push(`${value}.length`);
      return;
    }
    switch (field.carried) {
      case 'key':
        writes.push(`if (ownKey) r.text(${value});`);
        reads.push(`const ${v} = (head & ${OWN_KEY}) !== 0 ? r.readText() : listKey;`);
        texts.push(`(ownKey ? ${value}.length : 0)`);
        fixedBytes += 5;
        break;
      case 'name':
        writes.push(`r.varint(r.nameId(${value}));`);
        reads.push(`const ${v} = r.readName();`);
        fixedBytes += 5;
        break;
      case 'closed':
        lists.push(field.values);
        writes.push(`r.varint(r.closedId(${value}, lists[${lists.length - 1}]));`);
        reads.push(`const ${v} = r.readClosed(lists[${lists.length - 1}]);`);
        fixedBytes += 5;
        break;
      case 'text':
        writes.push(`r.text(${value});`);
        reads.push(`const ${v} = r.readText();`);
        texts.push(`${value}.length`);
        fixedBytes += 5;
        break;
      case 'id':
        if (idShift > 6) throw new RangeError(`attempt records: no room in the head byte for ${field.name}`);
        writes.push(`r.id(${value}, ${field.bytes}, ${idShift});`);
        reads.push(`const ${v} = r.readId(head, ${field.bytes}, ${idShift});`);
        texts.push(`${value}.length`);
        fixedBytes += Math.max(field.bytes, 5);
        idShift += 2;
        break;
      case 'time':
        writes.push(`r.float(${value});`);
        reads.push(`const ${v} = r.readFloat();`);
        fixedBytes += 8;
        break;
      case 'number':
        writes.push(`r.number(${value});`);
        reads.push(`const ${v} = r.readNumber();`);
        fixedBytes += 9;
        break;
      case 'placement':
        writes.push(`r.varint(r.placementId(${value}));`);
        reads.push(`const ${v} = r.placementAt(r.readVarint());`);
        fixedBytes += 5;
        break;
      case 'flag':
        bits.push(`(${value} ? ${1 << bit} : 0)`);
        values.push(`(flags & ${1 << bit++}) !== 0`);
        return;
      case 'optional':
        bits.push(`(${value} === ${literal(field.value)} ? ${1 << bit} : 0)`);
        values.push(`(flags & ${1 << bit++}) !== 0 ? ${literal(field.value)} : undefined`);
        return;
    }
    values.push(v);
  });
  if (bit > 8) throw new RangeError(`attempt records: more than 8 flags in a ${kind} attempt`);
  writes.push(`r.byte(${bits.length > 0 ? bits.join(' | ') : '0'});`);
  reads.push(
    'const flags = r.readByte();',
    'let a;',
    attemptLiteral(kind, 'a', (_, i) => values[i]!),
    'return a;',
  );
  const factory = (params: string, body: string[]) =>
    compileFunction<(lists: (readonly string[])[]) => never>(
      ['lists'],
      `return function (${params}) {\n${body.join('\n')}\n};`,
    )(lists);
  return {
    write: factory('a, r, ownKey', writes),
    read: factory('r, head, listKey, traceId, spanId', reads),
    fixedBytes,
    textLength: compileFunction(['a', 'ownKey'], `return ${texts.join(' + ')};`),
  };
}

const RECORDS = ATTEMPT_KINDS.map(recordOf);
const WRITE = Object.fromEntries(ATTEMPT_KINDS.map((kind, i) => [kind, RECORDS[i]!.write])) as Record<
  AttemptKind,
  WriteFields
>;
/** By KIND. */
const READ: readonly ReadFields[] = [...ATTEMPT_KINDS]
  .sort((a, b) => KIND[a] - KIND[b])
  .map((kind) => RECORDS[ATTEMPT_KINDS.indexOf(kind)]!.read);
const FIXED_BYTES = Object.fromEntries(
  ATTEMPT_KINDS.map((kind, i) => [kind, RECORDS[i]!.fixedBytes]),
) as Record<AttemptKind, number>;
const TEXT_LENGTH = Object.fromEntries(
  ATTEMPT_KINDS.map((kind, i) => [kind, RECORDS[i]!.textLength]),
) as Record<AttemptKind, (attempt: Attempt, ownKey: boolean) => number>;

/** Bytes of two lowercase hex digits by their character codes (high << 8 | low), -1 for anything else. */
const HEX_PAIRS = (() => {
  const digits = '0123456789abcdef';
  const pairs = new Int16Array(1 << 16).fill(-1);
  for (let high = 0; high < 16; high++)
    for (let low = 0; low < 16; low++)
      pairs[(digits.charCodeAt(high) << 8) | digits.charCodeAt(low)] = (high << 4) | low;
  return pairs;
})();
