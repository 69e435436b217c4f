import { describe, expect, it } from 'vitest';
import {
  ATTEMPT_FIELDS,
  ATTEMPT_KINDS,
  type Attempt,
  AttemptBatchDecoder,
  AttemptBatchEncoder,
  type AttemptField,
  attemptFromValues,
  KEYLESS_SEND_FIELDS,
  type KeylessSend,
  type Placement,
} from '../packages/attempts/src/index.ts';
import { AttemptRecords, NO_RECORD } from '../packages/detector/src/memory/attempt-records.ts';
import { type PlacementIds, readAttempts, writeAttempts } from '../packages/store/src/attempt-codec.ts';
import { JsonBytes } from '../packages/store/src/json-bytes.ts';
import { decodeAttemptsRecord, encodeAttemptRecord } from '../services/analyzer/src/kafka/attempt-records.ts';

/**
 * One property over every codec of attempts: random attempts of every kind, their fields drawn
 * by walking the attempt table (so a field added to it is drawn too), survive encode → decode
 * whole, with the table's property order, in the thread batches, the detector's compact records,
 * the store's segments and the attempts topic's records.
 */

/** mulberry32: the same draws on every run. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Domain {
  /** NaN, ±Infinity and -0 travel: binary codecs carry every float64, JSON does not. */
  exoticNumbers: boolean;
  /**
   * Status codes are integers from 0 up: the store packs a request's status code and its flags
   * into one number (its segments' `result`), which carries nothing else.
   */
  statusCodes: 'any' | 'integers';
}

class Draw {
  readonly #next: () => number;
  readonly #domain: Domain;
  readonly placements: Placement[];

  constructor(seed: number, domain: Domain) {
    this.#next = random(seed);
    this.#domain = domain;
    this.placements = Array.from({ length: 4 }, (_, i) =>
      Object.freeze({
        service: this.text(),
        node: i === 0 ? '' : `node-${i}`,
        cluster: this.text(),
        region: i % 2 === 0 ? 'eu' : '',
        zone: this.text(),
      }),
    );
  }

  below(n: number): number {
    return Math.floor(this.#next() * n);
  }

  pick<T>(values: readonly T[]): T {
    return values[this.below(values.length)]!;
  }

  /** '', ASCII, Latin-1, beyond it (emoji, CJK), lone surrogates, and long ones. */
  text(): string {
    switch (this.below(8)) {
      case 0:
        return '';
      case 1:
        return 'x'.repeat(300 + this.below(300));
      case 2:
        return `café ${this.below(1000)}`;
      case 3:
        return `支払い 💳 ${this.below(1000)}`;
      case 4:
        return `lone \ud800 ${this.pick(['\udc00', 'x', ''])}`;
      case 5:
        return '"quoted"\\\n\t\u0000';
      default:
        return `text-${this.below(50)}`;
    }
  }

  hex(bytes: number): string {
    let id = '';
    for (let i = 0; i < bytes * 2; i++) id += '0123456789abcdef'[this.below(16)];
    return id;
  }

  number(): number {
    const exotic = this.#domain.exoticNumbers
      ? [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0]
      : [];
    switch (this.below(6)) {
      case 0:
        return this.pick([0, 1, 200, 503, 2 ** 31 - 1, 2 ** 31, 2 ** 53 - 1, -1, ...exotic]);
      case 1:
        return this.#next() * 1e6 - 5e5;
      case 2:
        return -1 - this.below(100);
      default:
        return this.below(600);
    }
  }

  time(): number {
    return this.pick([
      0,
      1_767_225_600_000 + this.#next() * 1e7,
      1_767_225_600_000 + this.below(1e7),
      1_767_225_600_000 + 123.456_789,
      this.#next() * 1e3,
      ...(this.#domain.exoticNumbers ? [-0, Number.NaN] : []),
    ]);
  }

  value(field: AttemptField, key: string): unknown {
    switch (field.carried) {
      case 'key':
        return key;
      case 'name':
      case 'text':
        return this.text();
      case 'id':
        return this.pick([
          this.hex(field.bytes),
          this.hex(field.bytes),
          '',
          this.text(),
          this.hex(field.bytes).toUpperCase(),
        ]);
      case 'time':
        return this.time();
      case 'number':
        return field.name === 'statusCode' && this.#domain.statusCodes === 'integers'
          ? this.pick([0, 200, 409, 503, 2 ** 31, 2 ** 40])
          : this.number();
      case 'closed':
        return this.pick(field.values);
      case 'flag':
        return this.below(2) === 1;
      case 'optional':
        return this.below(2) === 1 ? field.value : undefined;
      case 'placement':
        return this.pick(this.placements);
    }
  }

  /** An attempt of a random kind, every field drawn as the table carries it. */
  attempt(key = this.key()): Attempt {
    const kind = this.pick(ATTEMPT_KINDS);
    return attemptFromValues[kind](ATTEMPT_FIELDS[kind].map((field: AttemptField) => this.value(field, key)));
  }

  send(): KeylessSend {
    const send: Record<string, unknown> = { kind: 'client' };
    for (const field of KEYLESS_SEND_FIELDS) send[field.name] = this.value(field, '');
    return send as unknown as KeylessSend;
  }

  key(): string {
    const key = this.text();
    return key === '' ? 'k' : key;
  }
}

/** The attempts, and their property order, as a codec must give them back. */
function expectSame(decoded: readonly unknown[], encoded: readonly unknown[]): void {
  expect(decoded).toStrictEqual(encoded);
  expect(decoded.map((a) => Object.keys(a as object))).toEqual(encoded.map((a) => Object.keys(a as object)));
}

const ATTEMPTS = 3_000;

describe('every attempt codec', () => {
  it('gives back every field of every kind through the thread batch codec', () => {
    const draw = new Draw(1, { exoticNumbers: true, statusCodes: 'any' });
    const encoder = new AttemptBatchEncoder();
    const decoder = new AttemptBatchDecoder();
    for (let batch = 0; batch < 10; batch++) {
      const attempts = Array.from({ length: ATTEMPTS / 10 }, () => draw.attempt());
      const keylessSends = Array.from({ length: 20 }, () => draw.send());
      const decoded = decoder.decode(
        encoder.encode({
          attempts,
          activity: [],
          invalid: { outcome: 0, hit: 0, scope: 0 },
          keylessSends,
          refusals: { byCode: {}, total: 0, firstMessage: '', truncatedValues: 0 },
        }),
      );
      expectSame(decoded.attempts, attempts);
      expectSame(decoded.keylessSends!, keylessSends);
    }
  });

  it("gives back every field of every kind through the detector's compact records, under their list's key or their own", () => {
    const draw = new Draw(2, { exoticNumbers: true, statusCodes: 'any' });
    const records = new AttemptRecords();
    for (let i = 0; i < ATTEMPTS; i++) {
      const attempt = draw.attempt();
      const listKey = draw.below(2) === 0 ? attempt.key : draw.key();
      const position = records.write(attempt, listKey, NO_RECORD);
      expectSame([records.read(position, listKey)], [attempt]);
    }
  });

  it("gives back every field of every kind through the store's segments", () => {
    const draw = new Draw(3, { exoticNumbers: false, statusCodes: 'integers' });
    const byId: Placement[] = [];
    const placements: PlacementIds = {
      idOf(placement) {
        const known = byId.indexOf(placement);
        return known === -1 ? byId.push(placement) : known + 1;
      },
      placement: (id) => byId[id - 1]!,
    };
    for (let segment = 0; segment < ATTEMPTS / 10; segment++) {
      const key = draw.key();
      const attempts = Array.from({ length: 1 + draw.below(20) }, () => draw.attempt(key));
      const out = new JsonBytes(64);
      writeAttempts(out, attempts, placements);
      expectSame(readAttempts(out.bytes().toString('utf8'), placements), attempts);
    }
  });

  it("gives back every field of every kind through the attempts topic's records", () => {
    const draw = new Draw(4, { exoticNumbers: false, statusCodes: 'any' });
    for (let i = 0; i < ATTEMPTS; i++) {
      const attempt = draw.attempt();
      const record = decodeAttemptsRecord(encodeAttemptRecord(attempt));
      expect(record.type).toBe('attempt');
      expectSame([(record as { attempt: Attempt }).attempt], [attempt]);
    }
  });
});
