/**
 * OTLP carries times as unsigned 64-bit Unix nanoseconds; keyscope's spans carry fractional Unix
 * milliseconds. A double holds about 15.9 significant digits, and today's times in microseconds
 * take 16, so the conversion keeps microseconds and drops the sub-microsecond digits: it truncates
 * nanoseconds to whole microseconds, then divides by 1000. Every decoder goes through these
 * functions, so protobuf and JSON give bit-identical numbers for the same nanoseconds, and
 * `encode → decode` returns the same number for any time that is already a whole microsecond.
 */

const TWO_POW_32 = 4294967296;

/**
 * From the two 32-bit halves of a fixed64 without BigInt: `high × 2³²` is split as
 * `high × 4294967 × 1000 + high × 296`, so every intermediate stays an exact integer below 2⁵³
 * for any time before the year 2262 (where `high` reaches 2³¹). Later times, up to 2⁶⁴ − 1 ns,
 * come out finite and approximate; no consumer takes them (see the pipeline's time window).
 */
export function millisFromNanoHalves(low: number, high: number): number {
  const micros = high * 4294967 + Math.floor((high * 296 + low) / 1000);
  return micros / 1000;
}

/** 2⁶⁴ − 1, the largest fixed64, as OTLP/JSON writes it. */
const UINT64_MAX_TEXT = '18446744073709551615';

/**
 * From the decimal string that OTLP/JSON uses for int64/fixed64 fields. Returns NaN unless the
 * string is ASCII digits (at least one), and +Infinity when it is but names more nanoseconds than
 * a fixed64 holds (above 18446744073709551615): a decoder refuses the first as malformed and the
 * second as out of range. Leading zeros do not count towards the range.
 */
export function millisFromNanoString(text: string): number {
  const length = text.length;
  if (length === 0) return Number.NaN;
  let first = -1;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return Number.NaN;
    if (first === -1 && code !== 48) first = i;
  }
  if (first === -1) return 0;
  const digits = length - first;
  // Strings of digits of one length compare as their numbers do.
  if (digits > 20 || (digits === 20 && text.slice(first) > UINT64_MAX_TEXT)) {
    return Number.POSITIVE_INFINITY;
  }
  // Dropping the last three digits is the exact integer division by 1000; what remains has at
  // most 17 digits, and up to 2⁵³ (the year 2255 in microseconds) Number() reads it exactly.
  if (digits <= 3) return 0;
  return Number(text.slice(first, length - 3)) / 1000;
}

/** 2⁶⁴: the first JSON number of nanoseconds a fixed64 cannot hold. */
export const NANOS_NUMBER_LIMIT = 2 ** 64;

/**
 * From a JSON number of nanoseconds, an integer from 0 to below NANOS_NUMBER_LIMIT (the decoder
 * checks). Exact only up to 2⁵³ ns, about 104 days after 1970: JSON.parse has already rounded a
 * larger one to a double, so today's times as numbers lose up to a few hundred nanoseconds.
 */
export function millisFromNanoNumber(nanos: number): number {
  return (nanos - (nanos % 1000)) / 1000 / 1000;
}

/** Whole microseconds of a millisecond time, for the encoders; RangeError when it cannot be sent. */
export function microsFromMillis(millis: number): number {
  const micros = Math.round(millis * 1000);
  if (!Number.isSafeInteger(micros) || micros < 0) {
    throw new RangeError(`time must be a non-negative Unix millisecond value, received ${millis}`);
  }
  return micros;
}

/** The decimal nanosecond string of a whole number of microseconds. */
export function nanoStringFromMicros(micros: number): string {
  return micros === 0 ? '0' : `${micros}000`;
}

/**
 * The two 32-bit halves of `micros × 1000` nanoseconds, computed exactly: `micros` is split at 2³²
 * so no product exceeds 2⁵³.
 */
export function nanoHalvesFromMicros(micros: number): { low: number; high: number } {
  const microsHigh = Math.floor(micros / TWO_POW_32);
  const microsLow = micros - microsHigh * TWO_POW_32;
  const lowProduct = microsLow * 1000;
  const carry = Math.floor(lowProduct / TWO_POW_32);
  return { low: lowProduct - carry * TWO_POW_32, high: microsHigh * 1000 + carry };
}
