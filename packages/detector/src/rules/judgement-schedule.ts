/**
 * Attempts past which a key is judged lazily. Judging reads and sorts all of a key's attempts;
 * doing that on every batch made a key's cost grow with its history (quadratic for a hot key).
 */
export const LARGE_KEY_ATTEMPTS = 64;

/**
 * When a key a batch changed is judged: at once, unless it is large (more than
 * LARGE_KEY_ATTEMPTS attempts), whose judgement waits until its attempts doubled since the last
 * one (or reached `maxAttemptsPerKey`) and is otherwise deferred to the next `tick`.
 *
 * Contract: `judged` is told of every judgement of a key (it is no longer deferred); a deferred
 * key stays deferred until then, also when its compact state is forgotten (`forget`), because its
 * attempts are still to be judged.
 */
export class JudgementSchedule {
  readonly #maxAttemptsPerKey: number;
  /** Attempts of each large key at its last judgement. */
  readonly #judgedAttempts = new Map<string, number>();
  /** Large keys with attempts not yet judged. */
  readonly #deferred = new Set<string>();

  constructor(maxAttemptsPerKey: number) {
    this.#maxAttemptsPerKey = maxAttemptsPerKey;
  }

  /** Whether a key changed by a batch, now holding `attempts`, is judged now rather than deferred. */
  judgesNow(partitionKey: string, attempts: number): boolean {
    if (attempts <= LARGE_KEY_ATTEMPTS || attempts >= this.#maxAttemptsPerKey) return true;
    return attempts >= 2 * (this.#judgedAttempts.get(partitionKey) ?? 0);
  }

  defer(partitionKey: string): void {
    this.#deferred.add(partitionKey);
  }

  /** The key was judged on `attempts` attempts. */
  judged(partitionKey: string, attempts: number): void {
    this.#deferred.delete(partitionKey);
    if (attempts > LARGE_KEY_ATTEMPTS) this.#judgedAttempts.set(partitionKey, attempts);
    else this.#judgedAttempts.delete(partitionKey);
  }

  /** The key left memory: its next batch is judged as a new key's would be. */
  forget(partitionKey: string): void {
    this.#judgedAttempts.delete(partitionKey);
  }

  /** The deferred keys, in order of partition key (a copy: judging them changes the set). */
  deferredKeys(): string[] {
    return [...this.#deferred].sort();
  }

  get deferredCount(): number {
    return this.#deferred.size;
  }
}
