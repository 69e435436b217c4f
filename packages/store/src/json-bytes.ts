/**
 * JSON text written straight into a growing byte buffer: the bytes `Buffer.from(JSON.stringify(v))`
 * would hold for the same arrays, strings and numbers, without building the arrays or the string
 * in between. The attempt table writes every attempt it stores this way: at ~40,000 attempts per
 * 200,000 spans the arrays and the JSON string were ~13 MB of the ~90 MB the service allocated.
 *
 * Strings of printable ASCII without `"` or `\` (ids, keys, routes, node names) are copied a byte
 * per character; any other string is escaped by JSON.stringify itself and written as UTF-8, so
 * escapes and lone surrogates come out exactly as JSON.stringify writes them. Numbers are written
 * as JSON.stringify writes them (a non-finite one as `null`).
 */
export class JsonBytes {
  #buffer: Buffer;
  #length = 0;

  constructor(initialBytes = 64 * 1024) {
    this.#buffer = Buffer.allocUnsafe(initialBytes);
  }

  /** Bytes written since the last `clear`. */
  get length(): number {
    return this.#length;
  }

  clear(): void {
    this.#length = 0;
  }

  /** The bytes written since the last `clear`: a view, valid until the next write. */
  bytes(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }

  /** One ASCII character of JSON syntax: `[`, `]`, `,`. */
  punctuation(code: number): void {
    this.#room(1);
    this.#buffer[this.#length++] = code;
  }

  /** `,` and then `text`: the next element of an array. */
  nextString(text: string): void {
    this.punctuation(COMMA);
    this.string(text);
  }

  /** `,` and then `value`: the next element of an array. */
  nextNumber(value: number): void {
    this.punctuation(COMMA);
    this.number(value);
  }

  string(text: string): void {
    const length = text.length;
    this.#room(length + 2);
    const buffer = this.#buffer;
    const start = this.#length;
    buffer[start] = QUOTE;
    for (let i = 0; i < length; i++) {
      const code = text.charCodeAt(i);
      if (code < 0x20 || code > 0x7e || code === QUOTE || code === BACKSLASH) {
        this.#escaped(text);
        return;
      }
      buffer[start + 1 + i] = code;
    }
    buffer[start + 1 + length] = QUOTE;
    this.#length = start + length + 2;
  }

  number(value: number): void {
    if (Number.isInteger(value) && value >= 0 && value <= MAX_DIGITS_INTEGER) {
      this.#room(10);
      this.#digits(value);
      return;
    }
    // Milliseconds to the microsecond (timestamps and their offsets): the double nearest to
    // k / 1000 prints as that decimal, trailing zeros dropped, which is the shortest that reads
    // back as it and so what JSON.stringify writes.
    const thousandths = Math.round(value * 1000);
    if (
      thousandths / 1000 === value &&
      thousandths > -MAX_DIGITS_INTEGER &&
      thousandths < MAX_DIGITS_INTEGER
    ) {
      this.#thousandths(thousandths);
      return;
    }
    this.#ascii(JSON.stringify(value) ?? 'null');
  }

  /** `thousandths / 1000` as JSON, for |thousandths| below 2^31. */
  #thousandths(thousandths: number): void {
    this.#room(13);
    const buffer = this.#buffer;
    let rest = thousandths;
    if (rest < 0) {
      buffer[this.#length++] = MINUS;
      rest = -rest;
    }
    const whole = (rest / 1000) | 0;
    let fraction = rest - whole * 1000;
    this.#digits(whole);
    if (fraction === 0) return;
    buffer[this.#length++] = DOT;
    let places = 3;
    while (fraction % 10 === 0) {
      fraction /= 10;
      places--;
    }
    for (let at = this.#length + places - 1; at >= this.#length; at--) {
      buffer[at] = 0x30 + (fraction % 10);
      fraction = (fraction / 10) | 0;
    }
    this.#length += places;
  }

  /** A non-negative integer below 2^31, in decimal; room for it must be made. */
  #digits(value: number): void {
    let digits = 1;
    for (let rest = value; rest >= 10; rest = (rest / 10) | 0) digits++;
    const end = this.#length + digits;
    let rest = value;
    for (let at = end - 1; at >= this.#length; at--) {
      this.#buffer[at] = 0x30 + (rest % 10);
      rest = (rest / 10) | 0;
    }
    this.#length = end;
  }

  /** Text that needs escaping, or is not ASCII: JSON.stringify's escapes, as UTF-8. */
  #escaped(text: string): void {
    const json = JSON.stringify(text);
    // A UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4).
    this.#room(json.length * 3);
    this.#length += this.#buffer.write(json, this.#length, 'utf8');
  }

  #ascii(text: string): void {
    this.#room(text.length);
    const buffer = this.#buffer;
    const start = this.#length;
    for (let i = 0; i < text.length; i++) buffer[start + i] = text.charCodeAt(i);
    this.#length = start + text.length;
  }

  /** Grows the buffer, keeping what is written, to take `more` bytes past it. */
  #room(more: number): void {
    if (this.#length + more <= this.#buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.#buffer.length, this.#length + more));
    this.#buffer.copy(grown, 0, 0, this.#length);
    this.#buffer = grown;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;
/** Integers up to here (10 digits) take the digit loop; larger ones JSON.stringify. */
const MAX_DIGITS_INTEGER = 2_147_483_647;

export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const COMMA = 0x2c;
