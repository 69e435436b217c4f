import type {
  Arrival,
  Attempt,
  ClientAttempt,
  KeylessSend,
  NodeActivity,
  Placement,
  ServerAttempt,
} from './attempt.ts';
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

const VERSION = 1;
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

const KIND = { server: 0, arrival: 1, client: 2, effect: 3 } as const;
/** Flags of an attempt's own int. */
const FAILED = 1;
const RELEASED = 2;
const EFFECT_SPANS_DECLARED = 4;
const KEY_FROM_CHILD = 8;
const OUTCOME_FROM_HTTP = 16;
/** A code unit above Latin-1 (a lone surrogate is one too). */
const TWO_BYTE = /[\u0100-\uffff]/;

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
 * Strings are references in the int section: a name (kept across batches) is its id ≥ 0, a text
 * (this batch's own) is −1 − its index. A placement is its id ≥ 0, or, where it is first used,
 * −1 − its id followed by the names of its five fields.
 */
export class AttemptBatchEncoder {
  readonly #limits: AttemptBatchCodecLimits;
  #names = new Map<string, number>();
  #placements = new Map<Placement, number>();
  readonly #out = new Values();
  #newNames: string[] = [];
  #textList: string[] = [];

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
    this.#newNames = [];
    this.#textList = [];
    const sends = batch.keylessSends ?? [];
    const codes = Object.entries(batch.refusals.byCode);
    // Forgotten between batches, never within one, so that every reference in a batch resolves.
    // An attempt names at most 7 names, a send 6, a placement 5.
    const items = batch.attempts.length + sends.length + batch.activity.length;
    const reset =
      this.#names.size + 12 * items + codes.length > this.#limits.maxNames ||
      this.#placements.size + items > this.#limits.maxPlacements;
    if (reset) {
      this.#names = new Map();
      this.#placements = new Map();
    }

    for (const attempt of batch.attempts) this.#attempt(attempt);
    for (const send of sends) this.#send(send);
    for (const sample of batch.activity) this.#activity(sample);
    for (const [code, count] of codes) {
      out.int(this.#name(code));
      out.float(count);
    }
    const { refusals, invalid } = batch;
    out.float(refusals.total);
    out.int(this.#text(refusals.firstMessage));
    out.float(refusals.truncatedValues);
    out.float(invalid.outcome);
    out.float(invalid.hit);
    out.float(invalid.scope);

    // New names first: the decoder adds them before it reads a reference to one.
    const strings = this.#newNames.concat(this.#textList);
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
    header[HEADER.newNames] = this.#newNames.length;
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

  #attempt(a: Attempt): void {
    const out = this.#out;
    this.#common(a, KIND[a.kind]);
    out.int(this.#text(a.key));
    out.int(this.#name(a.tenant));
    switch (a.kind) {
      case 'server':
        out.int(this.#name(a.outcome));
        out.int(this.#name(a.store));
        out.int(this.#name(a.scope));
        this.#result(
          a.statusCode,
          a.failed,
          a.effect,
          a.released,
          a.businessId,
          (a.effectSpansDeclared ? EFFECT_SPANS_DECLARED : 0) |
            (a.outcomeFrom === 'http' ? OUTCOME_FROM_HTTP : 0),
        );
        break;
      case 'arrival':
        this.#result(a.statusCode, a.failed, a.effect, a.released, a.businessId, 0);
        break;
      case 'client':
        this.#client(a, a.keyFrom === 'child');
        break;
      case 'effect':
        out.int(a.failed ? FAILED : 0);
        break;
    }
  }

  #send(send: KeylessSend): void {
    this.#common(send, KIND.client);
    this.#client(send, false);
  }

  #common(a: Attempt | KeylessSend, kind: number): void {
    const out = this.#out;
    out.int(kind);
    out.int(this.#text(a.traceId));
    out.int(this.#text(a.spanId));
    out.int(this.#text(a.parentSpanId));
    out.float(a.startUnixMillis);
    out.float(a.endUnixMillis);
    this.#placement(a.placement);
    out.int(this.#name(a.operation));
  }

  #client(a: ClientAttempt | KeylessSend, keyFromChild: boolean): void {
    const out = this.#out;
    out.float(a.resendCount);
    out.int(this.#name(a.target));
    out.float(a.statusCode);
    out.int(this.#name(a.error));
    out.int(keyFromChild ? KEY_FROM_CHILD : 0);
  }

  #result(
    statusCode: number,
    failed: boolean,
    effect: string,
    released: boolean,
    businessId: string,
    serverFlags: number,
  ): void {
    const out = this.#out;
    out.float(statusCode);
    out.int(this.#name(effect));
    out.int(this.#text(businessId));
    out.int((failed ? FAILED : 0) | (released ? RELEASED : 0) | serverFlags);
  }

  #activity(sample: NodeActivity): void {
    const out = this.#out;
    this.#placement(sample.placement);
    out.float(sample.bucketStartUnixMillis);
    out.float(sample.bucketMillis);
    out.float(sample.spans);
    out.float(sample.errors);
    const latency = sample.latency;
    out.int(latency === undefined ? -1 : latency.length);
    if (latency !== undefined) for (let i = 0; i < latency.length; i++) out.float(latency[i]!);
  }

  #placement(placement: Placement): void {
    const out = this.#out;
    const known = this.#placements.get(placement);
    if (known !== undefined) {
      out.int(known);
      return;
    }
    const id = this.#placements.size;
    this.#placements.set(placement, id);
    out.int(-1 - id);
    out.int(this.#name(placement.service));
    out.int(this.#name(placement.node));
    out.int(this.#name(placement.cluster));
    out.int(this.#name(placement.region));
    out.int(this.#name(placement.zone));
  }

  #name(name: string): number {
    const known = this.#names.get(name);
    if (known !== undefined) return known;
    const id = this.#names.size;
    this.#names.set(name, id);
    this.#newNames.push(name);
    return id;
  }

  /** Not looked up: a repeated id costs its characters again, less than hashing every id would. */
  #text(text: string): number {
    return -1 - (this.#textList.push(text) - 1);
  }
}

export class AttemptBatchDecoder {
  #names: string[] = [];
  #placements: Placement[] = [];
  #texts: string[] = [];
  #ints: Int32Array<ArrayBufferLike> = new Int32Array(0);
  #intAt = 0;
  #floats: Float64Array<ArrayBufferLike> = new Float64Array(0);
  #floatAt = 0;

  /**
   * A batch `AttemptBatchEncoder.encode` made, in its turn after the batches encoded before it.
   * Nothing decoded refers to `bytes` after: they may be written over (or reused) at once.
   */
  decode(bytes: Uint8Array<ArrayBufferLike>): CheckedAttempts {
    const header = new Int32Array(bytes.buffer, bytes.byteOffset, HEADER_INTS);
    if (header[HEADER.version] !== VERSION)
      throw new RangeError(`attempt batch version must be ${VERSION}, received ${header[HEADER.version]}`);
    if (header[HEADER.reset] === 1) {
      this.#names = [];
      this.#placements = [];
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
    const names = this.#names;
    const texts: string[] = new Array(stringCount - newNames);
    let offset = 0;
    for (let i = 0; i < stringCount; i++) {
      const end = offset + lengths[i]!;
      const s = joined.slice(offset, end);
      if (i < newNames) names.push(s);
      else texts[i - newNames] = s;
      offset = end;
    }
    this.#texts = texts;
    this.#ints = new Int32Array(bytes.buffer, at + intsStart, intCount);
    this.#floats = new Float64Array(bytes.buffer, at + floatsStart, floatCount);
    this.#intAt = 0;
    this.#floatAt = 0;

    const attempts: Attempt[] = new Array(header[HEADER.attempts]!);
    for (let i = 0; i < attempts.length; i++) attempts[i] = this.#attempt();
    const keylessSends: KeylessSend[] = new Array(header[HEADER.sends]!);
    for (let i = 0; i < keylessSends.length; i++) keylessSends[i] = this.#send();
    const activity: NodeActivity[] = new Array(header[HEADER.activity]!);
    for (let i = 0; i < activity.length; i++) activity[i] = this.#activity();
    const byCode: Record<string, number> = {};
    for (let i = header[HEADER.refusalCodes]!; i > 0; i--) {
      const code = this.#string();
      byCode[code] = this.#float();
    }
    const total = this.#float();
    const refusals: SpanRefusals = {
      byCode,
      total,
      firstMessage: this.#string(),
      truncatedValues: this.#float(),
    };
    const invalid = { outcome: this.#float(), hit: this.#float(), scope: this.#float() };
    return { attempts, activity, invalid, keylessSends, refusals };
  }

  // Objects are built with their properties in the order extraction creates them.
  #attempt(): Attempt {
    const kind = this.#int();
    const traceId = this.#string();
    const spanId = this.#string();
    const parentSpanId = this.#string();
    const startUnixMillis = this.#float();
    const endUnixMillis = this.#float();
    const placement = this.#placement();
    const operation = this.#string();
    const key = this.#string();
    const tenant = this.#string();
    if (kind === KIND.server) {
      const outcome = this.#string() as ServerAttempt['outcome'];
      const store = this.#string();
      const scope = this.#string() as ServerAttempt['scope'];
      const statusCode = this.#float();
      const effect = this.#string() as ServerAttempt['effect'];
      const businessId = this.#string();
      const flags = this.#int();
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
    if (kind === KIND.arrival) {
      const statusCode = this.#float();
      const effect = this.#string() as Arrival['effect'];
      const businessId = this.#string();
      const flags = this.#int();
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
    if (kind === KIND.client) {
      const resendCount = this.#float();
      const target = this.#string();
      const statusCode = this.#float();
      const error = this.#string();
      const flags = this.#int();
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
      if ((flags & KEY_FROM_CHILD) !== 0) attempt.keyFrom = 'child';
      return attempt;
    }
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
      failed: (this.#int() & FAILED) !== 0,
    };
  }

  #send(): KeylessSend {
    this.#int();
    const traceId = this.#string();
    const spanId = this.#string();
    const parentSpanId = this.#string();
    const startUnixMillis = this.#float();
    const endUnixMillis = this.#float();
    const placement = this.#placement();
    const operation = this.#string();
    const resendCount = this.#float();
    const target = this.#string();
    const statusCode = this.#float();
    const error = this.#string();
    this.#int();
    return {
      kind: 'client',
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
  }

  #activity(): NodeActivity {
    const placement = this.#placement();
    const sample: NodeActivity = {
      placement,
      bucketStartUnixMillis: this.#float(),
      bucketMillis: this.#float(),
      spans: this.#float(),
      errors: this.#float(),
    };
    const buckets = this.#int();
    if (buckets >= 0) {
      const latency: number[] = new Array(buckets);
      for (let i = 0; i < buckets; i++) latency[i] = this.#float();
      sample.latency = latency;
    }
    return sample;
  }

  #placement(): Placement {
    const ref = this.#int();
    if (ref >= 0) return this.#placements[ref]!;
    const placement = Object.freeze({
      service: this.#string(),
      node: this.#string(),
      cluster: this.#string(),
      region: this.#string(),
      zone: this.#string(),
    });
    this.#placements[-1 - ref] = placement;
    return placement;
  }

  #string(): string {
    const ref = this.#int();
    return ref >= 0 ? this.#names[ref]! : this.#texts[-1 - ref]!;
  }

  #int(): number {
    return this.#ints[this.#intAt++]!;
  }

  #float(): number {
    return this.#floats[this.#floatAt++]!;
  }
}
