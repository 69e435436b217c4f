/**
 * One attempts partition in a detect instance, from its assignment to this group member until its
 * state file is closed:
 *
 *     assigned ──► positioning ──► ready
 *                      ▲             │  every later join of the group
 *                      └─────────────┘
 *     positioning | ready ──► revoked ──► closed
 *
 * - positioning: the consumer is paused on it while its state is opened (or rebuilt) and the
 *   consumer is sought to where that state continues; batches fetched meanwhile are fetched again.
 * - ready: batches and timers apply to its detector.
 * - revoked: another member owns it, or the role stops; work still queued on it does nothing but
 *   close the state.
 * - closed: the state file is closed. A later assignment of the partition starts a new lifecycle.
 *
 * `D` is the detector holding the partition's state file; the transitions are plain data. A
 * transition that does not apply to the current phase returns the state unchanged: joins,
 * revocations and a slow positioning arrive in any order, and a late one must not undo a later one.
 */
export type PartitionState<D> =
  | { readonly phase: 'positioning'; readonly detector: D | undefined }
  | { readonly phase: 'ready'; readonly detector: D }
  | { readonly phase: 'revoked'; readonly detector: D | undefined }
  | { readonly phase: 'closed' };

/**
 * The partition is in the assignment of a join, the first or a later one: every join makes
 * kafkajs start again from the committed offset, which may trail the state, so a ready partition
 * is positioned again (its open state is kept). A revoked or closed state is left alone: the
 * partition given back gets a new lifecycle, after the old one's queued work.
 */
export function assigned<D>(state?: PartitionState<D>): PartitionState<D> {
  if (state === undefined) return { phase: 'positioning', detector: undefined };
  if (state.phase === 'ready') return { phase: 'positioning', detector: state.detector };
  return state;
}

/**
 * Positioning opened, discarded (`undefined`) or created the partition's state. A ready partition
 * whose state changes is positioning again until `positioned`. A revoked partition keeps what was
 * opened, so that its queued closing closes it.
 */
export function holding<D>(state: PartitionState<D>, detector: D | undefined): PartitionState<D> {
  switch (state.phase) {
    case 'positioning':
    case 'ready':
      return { phase: 'positioning', detector };
    case 'revoked':
      return { phase: 'revoked', detector };
    case 'closed':
      return state;
  }
}

/** The consumer was sought to where the state continues: batches apply from now on. */
export function positioned<D>(state: PartitionState<D>): PartitionState<D> {
  if (state.phase !== 'positioning' || state.detector === undefined) return state;
  return { phase: 'ready', detector: state.detector };
}

/** Another member owns the partition, or the role stops. */
export function revoked<D>(state: PartitionState<D>): PartitionState<D> {
  if (state.phase !== 'positioning' && state.phase !== 'ready') return state;
  return { phase: 'revoked', detector: state.detector };
}

/** The revoked partition's state file was closed. Only a revoked partition closes. */
export function closed<D>(state: PartitionState<D>): PartitionState<D> {
  return state.phase === 'revoked' ? { phase: 'closed' } : state;
}

/** Positioning or ready: this member still owns the partition. */
export function isOwned<D>(state: PartitionState<D>): boolean {
  return state.phase === 'positioning' || state.phase === 'ready';
}

/** The detector batches and timers apply to: only a ready partition's. */
export function readyDetector<D>(state: PartitionState<D>): D | undefined {
  return state.phase === 'ready' ? state.detector : undefined;
}

/** The open state, whatever the phase: what positioning continues from and closing closes. */
export function heldDetector<D>(state: PartitionState<D>): D | undefined {
  return state.phase === 'closed' ? undefined : state.detector;
}
