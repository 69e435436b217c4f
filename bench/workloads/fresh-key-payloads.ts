import { defaultMapping } from '@keyscope/attempts';
import type { Attributes, Span } from '@keyscope/otlp';
import { scenarios, simulateBatches } from '@keyscope/simulator';
import { UuidSource } from '../uuid-source.ts';
import { type EncodedPayloads, encodePayloads } from './encoded-payloads.ts';
import { SPANS_PER_PAYLOAD } from './simulated-payloads.ts';

/**
 * The simulator's benchmark scenario, simulated once, and encoded again for every `next()` with
 * every idempotency key replaced by a fresh one (UUIDs by new UUIDs, the sequence keys of
 * `transfers` by themselves with the pass's number), the same within a pass: traffic of the same
 * shape, none of whose keys the store has seen, for a service that stays up across passes.
 * Everything else (trace and span ids, times, nodes) is the same in every pass.
 */
export class FreshKeyPayloads {
  readonly #batches: Span[][];
  readonly #keyAttributes: readonly string[];
  #pass = 0;

  constructor(spans: number, seed: number) {
    this.#batches = [
      ...simulateBatches(scenarios.benchmark({ spans }), { seed, batchSize: SPANS_PER_PAYLOAD }).batches,
    ];
    this.#keyAttributes = defaultMapping().fields.key;
  }

  /** The scenario as first simulated, its keys as the simulator made them. */
  original(): EncodedPayloads {
    return encodePayloads(this.#batches);
  }

  /** The scenario under keys no earlier pass used. */
  next(): EncodedPayloads {
    const pass = ++this.#pass;
    const uuids = new UuidSource(1_000_003 * pass);
    const fresh = new Map<string, string>();
    const freshKey = (key: string) => {
      let renamed = fresh.get(key);
      if (renamed === undefined) {
        renamed = key.length === 36 ? uuids.next() : `${key}-${pass}`;
        fresh.set(key, renamed);
      }
      return renamed;
    };
    return encodePayloads(this.#batches.map((batch) => batch.map((span) => this.#renamed(span, freshKey))));
  }

  #renamed(span: Span, freshKey: (key: string) => string): Span {
    let attributes: Attributes | undefined;
    for (const name of this.#keyAttributes) {
      const value = span.attributes[name];
      if (value === undefined) continue;
      attributes ??= Object.assign(Object.create(null) as Attributes, span.attributes);
      if (typeof value === 'string') attributes[name] = freshKey(value);
      else if (Array.isArray(value))
        attributes[name] = value.map((v) => (typeof v === 'string' ? freshKey(v) : v));
    }
    return attributes === undefined ? span : { ...span, attributes };
  }
}
