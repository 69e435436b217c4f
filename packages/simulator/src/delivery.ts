import type { Span } from '@keyscope/otlp';
import { Prng } from './prng.ts';

/**
 * How a pipeline really delivers spans: out of order, more than once, in payloads of uneven size.
 * Tests apply these to a simulation's spans to check that results do not depend on delivery.
 */

/** A seeded permutation (the input is not modified). */
export function shuffle<T>(items: readonly T[], seed: number): T[] {
  const rng = new Prng(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(0, i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * The spans plus redeliveries of about `fraction` of them, as an exporter or collector retry would
 * produce: equal copies (same trace and span ids, new objects) arriving after every original.
 */
export function duplicateSome(spans: readonly Span[], fraction: number, seed: number): Span[] {
  if (!(fraction >= 0 && fraction <= 1))
    throw new RangeError(`fraction must be in [0, 1], received ${fraction}`);
  const rng = new Prng(seed);
  const copies: Span[] = [];
  for (const span of spans) if (rng.chance(fraction)) copies.push(redelivered(span));
  return [...spans, ...shuffle(copies, rng.uint32())];
}

function redelivered(span: Span): Span {
  return {
    ...span,
    status: { ...span.status },
    attributes: { ...span.attributes },
    events: span.events.map((e) => ({ ...e, attributes: { ...e.attributes } })),
  };
}

/** Cuts the spans, in order, into `count` payloads of random sizes (non-empty while spans last). */
export function splitIntoPayloads(spans: readonly Span[], count: number, seed: number): Span[][] {
  if (!(Number.isInteger(count) && count >= 1))
    throw new RangeError(`count must be an integer >= 1, received ${count}`);
  const rng = new Prng(seed);
  const cuts = new Set<number>();
  const wanted = Math.min(count - 1, Math.max(0, spans.length - 1));
  while (cuts.size < wanted) cuts.add(rng.int(1, spans.length));
  const bounds = [0, ...[...cuts].sort((a, b) => a - b), spans.length];
  const payloads: Span[][] = [];
  for (let i = 0; i + 1 < bounds.length; i++) payloads.push(spans.slice(bounds[i], bounds[i + 1]));
  while (payloads.length < count) payloads.push([]);
  return payloads;
}
