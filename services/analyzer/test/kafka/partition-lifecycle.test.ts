import { describe, expect, it } from 'vitest';
import {
  assigned,
  closed,
  heldDetector,
  holding,
  isOwned,
  type PartitionState,
  positioned,
  readyDetector,
  revoked,
} from '../../src/kafka/partition-lifecycle.ts';

/** Stands for a partition's open state file. */
interface StateFile {
  readonly name: string;
}

const fileA: StateFile = { name: 'attempts-3.db (resumed)' };
const fileB: StateFile = { name: 'attempts-3.db (rebuilt)' };

type State = PartitionState<StateFile>;
const positioningEmpty: State = { phase: 'positioning', detector: undefined };
const positioningWith = (detector: StateFile): State => ({ phase: 'positioning', detector });
const readyWith = (detector: StateFile): State => ({ phase: 'ready', detector });
const revokedWith = (detector: StateFile | undefined): State => ({ phase: 'revoked', detector });
const closedState: State = { phase: 'closed' };

describe('a partition assigned to the detect instance', () => {
  it('starts positioning, holding no state yet', () => {
    expect(assigned<StateFile>()).toEqual(positioningEmpty);
  });

  it('holds the state positioning opens, discards or creates', () => {
    const opened = holding(positioningEmpty, fileA);
    expect(opened).toEqual(positioningWith(fileA));
    const discarded = holding(opened, undefined);
    expect(discarded).toEqual(positioningEmpty);
    expect(holding(discarded, fileB)).toEqual(positioningWith(fileB));
  });

  it('becomes ready once positioned with a state', () => {
    expect(positioned(positioningWith(fileA))).toEqual(readyWith(fileA));
  });

  it('stays positioning when positioned without a state to apply batches to', () => {
    expect(positioned(positioningEmpty)).toBe(positioningEmpty);
  });

  it('is positioned again, keeping its open state, at every later join', () => {
    expect(assigned(readyWith(fileA))).toEqual(positioningWith(fileA));
    const positioning = positioningWith(fileA);
    expect(assigned(positioning)).toBe(positioning);
  });

  it('stays ready when a second join positioned it again with the same state', () => {
    const ready = readyWith(fileA);
    expect(positioned(ready)).toBe(ready);
  });

  it('is positioning again when a later positioning replaces its state', () => {
    expect(holding(readyWith(fileA), undefined)).toEqual(positioningEmpty);
    expect(holding(readyWith(fileA), fileB)).toEqual(positioningWith(fileB));
  });
});

describe('a partition revoked from the detect instance', () => {
  it('keeps the state it held, positioning or ready, so that its closing closes it', () => {
    expect(revoked(positioningEmpty)).toEqual(revokedWith(undefined));
    expect(revoked(positioningWith(fileA))).toEqual(revokedWith(fileA));
    expect(revoked(readyWith(fileA))).toEqual(revokedWith(fileA));
  });

  it('keeps a state that a positioning still under way opens after the revocation', () => {
    expect(holding(revokedWith(fileA), fileB)).toEqual(revokedWith(fileB));
    expect(holding(revokedWith(fileA), undefined)).toEqual(revokedWith(undefined));
  });

  it('never becomes ready when a positioning under way finishes after the revocation', () => {
    const gone = revokedWith(fileA);
    expect(positioned(gone)).toBe(gone);
  });

  it('ignores a later join: the partition given back starts a new lifecycle', () => {
    const gone = revokedWith(fileA);
    expect(assigned(gone)).toBe(gone);
    expect(assigned(closedState)).toBe(closedState);
  });

  it('ignores being revoked again', () => {
    const gone = revokedWith(fileA);
    expect(revoked(gone)).toBe(gone);
    expect(revoked(closedState)).toBe(closedState);
  });

  it('closes once its state file is closed', () => {
    expect(closed(revokedWith(fileA))).toEqual(closedState);
    expect(closed(revokedWith(undefined))).toEqual(closedState);
  });
});

describe('closing a partition', () => {
  it('is refused while the instance still owns it', () => {
    const positioning = positioningWith(fileA);
    const ready = readyWith(fileA);
    expect(closed(positioning)).toBe(positioning);
    expect(closed(ready)).toBe(ready);
  });

  it('is final: nothing moves a closed partition', () => {
    expect(holding(closedState, fileA)).toBe(closedState);
    expect(positioned(closedState)).toBe(closedState);
    expect(closed(closedState)).toBe(closedState);
  });
});

describe('what each phase lets the detect role do', () => {
  const phases: [string, State][] = [
    ['positioning without a state', positioningEmpty],
    ['positioning with a state', positioningWith(fileA)],
    ['ready', readyWith(fileA)],
    ['revoked with a state', revokedWith(fileA)],
    ['revoked without a state', revokedWith(undefined)],
    ['closed', closedState],
  ];

  it('applies batches and timers to a ready partition only', () => {
    expect(phases.map(([name, state]) => [name, readyDetector(state)])).toEqual([
      ['positioning without a state', undefined],
      ['positioning with a state', undefined],
      ['ready', fileA],
      ['revoked with a state', undefined],
      ['revoked without a state', undefined],
      ['closed', undefined],
    ]);
  });

  it('closes the state held in any phase but closed', () => {
    expect(phases.map(([name, state]) => [name, heldDetector(state)])).toEqual([
      ['positioning without a state', undefined],
      ['positioning with a state', fileA],
      ['ready', fileA],
      ['revoked with a state', fileA],
      ['revoked without a state', undefined],
      ['closed', undefined],
    ]);
  });

  it('keeps positioning and reports failures only while the instance owns the partition', () => {
    expect(phases.map(([name, state]) => [name, isOwned(state)])).toEqual([
      ['positioning without a state', true],
      ['positioning with a state', true],
      ['ready', true],
      ['revoked with a state', false],
      ['revoked without a state', false],
      ['closed', false],
    ]);
  });
});
