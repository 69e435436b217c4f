import type { Attempt } from '@keyscope/attempts';
import type { EvidenceCoverage } from './evidence-coverage.ts';

/**
 * The attempts of sampled keys a batch kept, held until the batch's loop is done and then handed
 * to the evidence coverage join in one pass: the join's state stays in cache for the pass instead
 * of being evicted by the rest of the work on each attempt.
 *
 * Contract: the join knows keys by the detector's slot, so `detach` hands over what is held before
 * it tells the join a slot is free; a slot is detached before it is handed to another key. Held as
 * three parallel arrays, reused from batch to batch: no object per attempt.
 */
export class CoverageBatch {
  readonly #coverage: EvidenceCoverage;
  readonly #attempts: Attempt[] = [];
  readonly #slots: number[] = [];
  /** Whether the attempt's key held attempts before it (`EvidenceCoverage.add`'s `seenBefore`). */
  readonly #seenBefore: boolean[] = [];

  constructor(coverage: EvidenceCoverage) {
    this.#coverage = coverage;
  }

  hold(attempt: Attempt, slot: number, seenBefore: boolean): void {
    this.#attempts.push(attempt);
    this.#slots.push(slot);
    this.#seenBefore.push(seenBefore);
  }

  /** Hands every attempt held to the join, in the order held. */
  handOff(): void {
    const attempts = this.#attempts;
    const slots = this.#slots;
    const seenBefore = this.#seenBefore;
    for (let i = 0; i < attempts.length; i++) this.#coverage.add(attempts[i]!, slots[i]!, seenBefore[i]!);
    attempts.length = 0;
    slots.length = 0;
    seenBefore.length = 0;
  }

  /** The slot's key was forgotten and the slot may go to another key (`EvidenceCoverage.detach`). */
  detach(slot: number): void {
    if (this.#attempts.length > 0) this.handOff();
    this.#coverage.detach(slot);
  }

  /** Attempts held, not yet handed off. */
  get size(): number {
    return this.#attempts.length;
  }
}
