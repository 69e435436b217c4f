import type { Attempt, KeylessSend, NodeActivity, Placement } from './attempt.ts';
import {
  ATTEMPT_FIELDS,
  ATTEMPT_KINDS,
  type AttemptField,
  type AttemptKind,
  attemptLiteral,
  compileFunction,
  KEYLESS_SEND_FIELDS,
  literal,
} from './attempt-schema.ts';
import type { CheckedAttempts, SpanRefusals } from './span-limits.ts';

/**
 * Extracted batches as bytes, for handing them from the thread that extracted them to the one
 * that detects (`keyscope analyze --threads`): one ArrayBuffer per batch, transferable, so that
 * nothing is copied object by object on either side, as a structured clone of the attempts does.
 *
 * An encoder and its decoder are a pair over one stream of batches, decoded in the order they
 * were encoded: names (tenants, operations, stores, outcomes, targets, errors, placement fields)
 * and placements are sent once and referred to by number after, so the decoder hands every batch
 * the same strings and the same frozen placement objects, as extraction on one thread does
 * (placements compared by identity, names hashed once). Both sides forget them together once
 * `maxNames` or `maxPlacements` would be exceeded. Ids, keys and business ids travel in each
 * batch's own table.
 *
 * A decoded batch equals the encoded one, property order included (`toEqual`, and
 * `JSON.stringify` alike); every string reads back unchanged, lone surrogates included, and
 * every number is a float64.
 *
 * Layout, in the platform's byte order (both sides are threads of one process): a header of 12
 * int32s (see HEADER), each string's length, the int32 values, the float64 values (8-aligned),
 * then the characters of every string in order, as Latin-1 when they all fit, else UTF-16 code
 * units. Not a format to store or send elsewhere: the attempts topic's JSON records and the
 * store's segments are the formats for readers and disks.
 */
export interface AttemptBatchCodecLimits {
  readonly maxNames: number;
  readonly maxPlacements: number;
}

export function defaultAttemptBatchCodecLimits(): AttemptBatchCodecLimits {
  return { maxNames: 65_536, maxPlacements: 16_384 };
}

const VERSION = 2;
/** Where the header's fields are. */
const HEADER = {
  version: 0,
  /** 1: the decoder forgets its names and placements before reading this batch. */
  reset: 1,
  ints: 2,
  floats: 3,
  /** Strings in the batch: its new names first, then its texts. */
  strings: 4,
  newNames: 5,
  /** Characters of all strings; in bytes, that many (Latin-1) or twice as many (UTF-16). */
  chars: 6,
  twoByte: 7,
  attempts: 8,
  sends: 9,
  activity: 10,
  refusalCodes: 11,
} as const;
const HEADER_INTS = 12;

/** A code unit above Latin-1 (a lone surrogate is one too). */
const TWO_BYTE = /[\u0100-\uffff]/;

/**
 * An attempt is its kind's index in ATTEMPT_KINDS, then its fields in the table's order
 * (attempt-schema.ts): keys, ids and texts as text references, names and closed values as name
 * references, times and numbers as float64s, its placement (see `placement`), and its flags and
 * optional fields as bits of one int after the rest, in the table's order from bit 0. A keyless
 * send is a client's kind and its fields (KEYLESS_SEND_FIELDS).
 */
const KIND: Readonly<Record<AttemptKind, number>> = { server: 0, arrival: 1, client: 2, effect: 3 };

/** The most names an attempt or a send refers to: its named fields and its placement's five. */
const MAX_NAMES_PER_ITEM =
  5 +
  Math.max(
    ...ATTEMPT_KINDS.map(
      (kind) => ATTEMPT_FIELDS[kind].filter((f) => f.carried === 'name' || f.carried === 'closed').length,
    ),
  );

/** Int32 and float64 values in the order they are written; reused from batch to batch. */
class Values {
  ints = new Int32Array(4096);
  floats = new Float64Array(2048);
  intCount = 0;
  floatCount = 0;

  int(value: number): void {
    if (this.intCount === this.ints.length) {
      const ints = new Int32Array(this.ints.length * 2);
      ints.set(this.ints);
      this.ints = ints;
    }
    this.ints[this.intCount++] = value;
  }

  float(value: number): void {
    if (this.floatCount === this.floats.length) {
      const floats = new Float64Array(this.floats.length * 2);
      floats.set(this.floats);
      this.floats = floats;
    }
    this.floats[this.floatCount++] = value;
  }
}

/**
 * What the generated field writers call: the values of one batch, its names and texts.
 * Strings are references in the int section: a name (kept across batches) is its id ≥ 0, a text
 * (this batch's own) is −1 − its index. A placement is its id ≥ 0, or, where it is first used,
 * −1 − its id followed by the names of its five fields.
 */
class BatchWriter extends Values {
  names = new Map<string, number>();
  placements = new Map<Placement, number>();
  newNames: string[] = [];
  texts: string[] = [];

  name(name: string): number {
    const known = this.names.get(name);
    if (known !== undefined) return known;
    const id = this.names.size;
    this.names.set(name, id);
    this.newNames.push(name);
    return id;
  }

  /** Not looked up: a repeated id costs its characters again, less than hashing every id would. */
  text(text: string): number {
    return -1 - (this.texts.push(text) - 1);
  }

  placement(placement: Placement): void {
    const known = this.placements.get(placement);
    if (known !== undefined) {
      this.int(known);
      return;
    }
    const id = this.placements.size;
    this.placements.set(placement, id);
    this.int(-1 - id);
    this.int(this.name(placement.service));
    this.int(this.name(placement.node));
    this.int(this.name(placement.cluster));
    this.int(this.name(placement.region));
    this.int(this.name(placement.zone));
  }
}

/** What the generated field readers call: the batch's values and the names and placements so far. */
class BatchReader {
  names: string[] = [];
  placements: Placement[] = [];
  texts: string[] = [];
  ints: Int32Array<ArrayBufferLike> = new Int32Array(0);
  intAt = 0;
  floats: Float64Array<ArrayBufferLike> = new Float64Array(0);
  floatAt = 0;

  placement(): Placement {
    const ref = this.int();
    if (ref >= 0) return this.placements[ref]!;
    const placement = Object.freeze({
      service: this.string(),
      node: this.string(),
      cluster: this.string(),
      region: this.string(),
      zone: this.string(),
    });
    this.placements[-1 - ref] = placement;
    return placement;
  }

  string(): string {
    const ref = this.int();
    return ref >= 0 ? this.names[ref]! : this.texts[-1 - ref]!;
  }

  int(): number {
    return this.ints[this.intAt++]!;
  }

  float(): number {
    return this.floats[this.floatAt++]!;
  }
}

type Shape = AttemptKind | 'send';
const fieldsOf = (shape: Shape): readonly AttemptField[] =>
  shape === 'send' ? KEYLESS_SEND_FIELDS : ATTEMPT_FIELDS[shape];
const isBit = (field: AttemptField): boolean => field.carried === 'flag' || field.carried === 'optional';

/** The writer of one shape's fields, generated from the table (see KIND). */
function writerOf(shape: Shape): (item: Attempt | KeylessSend, out: BatchWriter) => void {
  const lines = [`w.int(${KIND[shape === 'send' ? 'client' : shape]});`];
  const bits: string[] = [];
  for (const field of fieldsOf(shape)) {
    const value = `a.${field.name}`;
    switch (field.carried) {
      case 'key':
      case 'text':
      case 'id':
        lines.push(`w.int(w.text(${value}));`);
        break;
      case 'name':
      case 'closed':
        lines.push(`w.int(w.name(${value}));`);
        break;
      case 'time':
      case 'number':
        lines.push(`w.float(${value});`);
        break;
      case 'placement':
        lines.push(`w.placement(${value});`);
        break;
      case 'flag':
        bits.push(`(${value} ? ${1 << bits.length} : 0)`);
        break;
      case 'optional':
        bits.push(`(${value} === ${literal(field.value)} ? ${1 << bits.length} : 0)`);
        break;
    }
  }
  if (bits.length > 0) lines.push(`w.int(${bits.join(' | ')});`);
  return compileFunction(['a', 'w'], lines.join('\n'));
}

/** The reader of one shape's fields after its kind, generated from the table (see KIND). */
function readerOf(shape: Shape): (input: BatchReader) => Attempt {
  const fields = fieldsOf(shape);
  const lines: string[] = [];
  fields.forEach((field, i) => {
    if (field.carried === 'placement') lines.push(`const v${i} = r.placement();`);
    else if (field.carried === 'time' || field.carried === 'number') lines.push(`const v${i} = r.float();`);
    else if (!isBit(field)) lines.push(`const v${i} = r.string();`);
  });
  if (fields.some(isBit)) lines.push('const bits = r.int();');
  let bit = 0;
  const values = fields.map((field, i) => {
    if (field.carried === 'flag') return `(bits & ${1 << bit++}) !== 0`;
    if (field.carried === 'optional')
      return `(bits & ${1 << bit++}) !== 0 ? ${literal(field.value)} : undefined`;
    return `v${i}`;
  });
  lines.push(
    'let a;',
    attemptLiteral(shape, 'a', (_, i) => values[i]!),
    'return a;',
  );
  return compileFunction(['r'], lines.join('\n'));
}

const WRITE: Readonly<Record<Shape, (item: Attempt | KeylessSend, out: BatchWriter) => void>> = {
  server: writerOf('server'),
  arrival: writerOf('arrival'),
  client: writerOf('client'),
  effect: writerOf('effect'),
  send: writerOf('send'),
};
const READ: readonly ((input: BatchReader) => Attempt)[] = ATTEMPT_KINDS.map(readerOf);
const READ_SEND = readerOf('send') as unknown as (input: BatchReader) => KeylessSend;

export class AttemptBatchEncoder {
  readonly #limits: AttemptBatchCodecLimits;
  readonly #out = new BatchWriter();

  constructor(limits: AttemptBatchCodecLimits = defaultAttemptBatchCodecLimits()) {
    this.#limits = limits;
  }

  /**
   * The batch as bytes: written at the start of `into` when it has room (and starts 8-aligned in
   * its buffer, a SharedArrayBuffer's included), else in an ArrayBuffer of their own to transfer.
   * Reads the batch only.
   */
  encode(batch: CheckedAttempts): Uint8Array<ArrayBuffer>;
  encode(batch: CheckedAttempts, into: Uint8Array<ArrayBufferLike>): Uint8Array<ArrayBufferLike>;
  encode(batch: CheckedAttempts, into?: Uint8Array<ArrayBufferLike>): Uint8Array<ArrayBufferLike> {
    const out = this.#out;
    out.intCount = 0;
    out.floatCount = 0;
    out.newNames = [];
    out.texts = [];
    const sends = batch.keylessSends ?? [];
    const codes = Object.entries(batch.refusals.byCode);
    // Forgotten between batches, never within one, so that every reference in a batch resolves.
    const items = batch.attempts.length + sends.length + batch.activity.length;
    const reset =
      out.names.size + MAX_NAMES_PER_ITEM * items + codes.length > this.#limits.maxNames ||
      out.placements.size + items > this.#limits.maxPlacements;
    if (reset) {
      out.names = new Map();
      out.placements = new Map();
    }

    const attempts = batch.attempts;
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i]!;
      WRITE[attempt.kind](attempt, out);
    }
    const writeSend = WRITE.send;
    for (let i = 0; i < sends.length; i++) writeSend(sends[i]!, out);
    for (const sample of batch.activity) this.#activity(sample);
    for (const [code, count] of codes) {
      out.int(out.name(code));
      out.float(count);
    }
    const { refusals, invalid } = batch;
    out.float(refusals.total);
    out.int(out.text(refusals.firstMessage));
    out.float(refusals.truncatedValues);
    out.float(invalid.outcome);
    out.float(invalid.hit);
    out.float(invalid.scope);

    // New names first: the decoder adds them before it reads a reference to one.
    const strings = out.newNames.concat(out.texts);
    const joined = strings.join('');
    const twoByte = TWO_BYTE.test(joined);
    const lengthsStart = HEADER_INTS * 4;
    const intsStart = lengthsStart + strings.length * 4;
    const floatsStart = Math.ceil((intsStart + out.intCount * 4) / 8) * 8;
    const charsStart = floatsStart + out.floatCount * 8;
    const size = charsStart + joined.length * (twoByte ? 2 : 1);
    const fits = into !== undefined && into.byteLength >= size && into.byteOffset % 8 === 0;
    const buffer = fits ? into.buffer : new ArrayBuffer(size);
    const at = fits ? into.byteOffset : 0;
    const header = new Int32Array(buffer, at, HEADER_INTS);
    header[HEADER.version] = VERSION;
    header[HEADER.reset] = reset ? 1 : 0;
    header[HEADER.ints] = out.intCount;
    header[HEADER.floats] = out.floatCount;
    header[HEADER.strings] = strings.length;
    header[HEADER.newNames] = out.newNames.length;
    header[HEADER.chars] = joined.length;
    header[HEADER.twoByte] = twoByte ? 1 : 0;
    header[HEADER.attempts] = batch.attempts.length;
    header[HEADER.sends] = sends.length;
    header[HEADER.activity] = batch.activity.length;
    header[HEADER.refusalCodes] = codes.length;
    const lengths = new Int32Array(buffer, at + lengthsStart, strings.length);
    for (let i = 0; i < strings.length; i++) lengths[i] = strings[i]!.length;
    new Int32Array(buffer, at + intsStart, out.intCount).set(out.ints.subarray(0, out.intCount));
    new Float64Array(buffer, at + floatsStart, out.floatCount).set(out.floats.subarray(0, out.floatCount));
    const chars = Buffer.from(buffer, at + charsStart, size - charsStart);
    // Both write code units as they are: a lone surrogate stays one (UTF-8 would replace it).
    chars.write(joined, twoByte ? 'utf16le' : 'latin1');
    return new Uint8Array(buffer, at, size);
  }

  #activity(sample: NodeActivity): void {
    const out = this.#out;
    out.placement(sample.placement);
    out.float(sample.bucketStartUnixMillis);
    out.float(sample.bucketMillis);
    out.float(sample.spans);
    out.float(sample.errors);
    const latency = sample.latency;
    out.int(latency === undefined ? -1 : latency.length);
    if (latency !== undefined) for (let i = 0; i < latency.length; i++) out.float(latency[i]!);
  }
}

export class AttemptBatchDecoder {
  readonly #in = new BatchReader();

  /**
   * A batch `AttemptBatchEncoder.encode` made, in its turn after the batches encoded before it.
   * Nothing decoded refers to `bytes` after: they may be written over (or reused) at once.
   */
  decode(bytes: Uint8Array<ArrayBufferLike>): CheckedAttempts {
    const header = new Int32Array(bytes.buffer, bytes.byteOffset, HEADER_INTS);
    if (header[HEADER.version] !== VERSION)
      throw new RangeError(`attempt batch version must be ${VERSION}, received ${header[HEADER.version]}`);
    const input = this.#in;
    if (header[HEADER.reset] === 1) {
      input.names = [];
      input.placements = [];
    }
    const stringCount = header[HEADER.strings]!;
    const intCount = header[HEADER.ints]!;
    const floatCount = header[HEADER.floats]!;
    const chars = header[HEADER.chars]!;
    const twoByte = header[HEADER.twoByte] === 1;
    const lengthsStart = HEADER_INTS * 4;
    const intsStart = lengthsStart + stringCount * 4;
    const floatsStart = Math.ceil((intsStart + intCount * 4) / 8) * 8;
    const charsStart = floatsStart + floatCount * 8;
    const at = bytes.byteOffset;
    const lengths = new Int32Array(bytes.buffer, at + lengthsStart, stringCount);
    const text = Buffer.from(bytes.buffer, at + charsStart, twoByte ? chars * 2 : chars);
    const joined = text.toString(twoByte ? 'utf16le' : 'latin1');
    const newNames = header[HEADER.newNames]!;
    const names = input.names;
    const texts: string[] = new Array(stringCount - newNames);
    let offset = 0;
    for (let i = 0; i < stringCount; i++) {
      const end = offset + lengths[i]!;
      const s = joined.slice(offset, end);
      if (i < newNames) names.push(s);
      else texts[i - newNames] = s;
      offset = end;
    }
    input.texts = texts;
    input.ints = new Int32Array(bytes.buffer, at + intsStart, intCount);
    input.floats = new Float64Array(bytes.buffer, at + floatsStart, floatCount);
    input.intAt = 0;
    input.floatAt = 0;

    const attempts: Attempt[] = new Array(header[HEADER.attempts]!);
    for (let i = 0; i < attempts.length; i++) attempts[i] = READ[input.int()]!(input);
    const keylessSends: KeylessSend[] = new Array(header[HEADER.sends]!);
    for (let i = 0; i < keylessSends.length; i++) {
      input.int();
      keylessSends[i] = READ_SEND(input);
    }
    const activity: NodeActivity[] = new Array(header[HEADER.activity]!);
    for (let i = 0; i < activity.length; i++) activity[i] = this.#activity();
    const byCode: Record<string, number> = {};
    for (let i = header[HEADER.refusalCodes]!; i > 0; i--) {
      const code = input.string();
      byCode[code] = input.float();
    }
    const total = input.float();
    const refusals: SpanRefusals = {
      byCode,
      total,
      firstMessage: input.string(),
      truncatedValues: input.float(),
    };
    const invalid = { outcome: input.float(), hit: input.float(), scope: input.float() };
    return { attempts, activity, invalid, keylessSends, refusals };
  }

  #activity(): NodeActivity {
    const input = this.#in;
    const placement = input.placement();
    const sample: NodeActivity = {
      placement,
      bucketStartUnixMillis: input.float(),
      bucketMillis: input.float(),
      spans: input.float(),
      errors: input.float(),
    };
    const buckets = input.int();
    if (buckets >= 0) {
      const latency: number[] = new Array(buckets);
      for (let i = 0; i < buckets; i++) latency[i] = input.float();
      sample.latency = latency;
    }
    return sample;
  }
}
