import { TEST_EPOCH_UNIX_MILLIS } from '@keyscope/attempts/testing';
import { describe, expect, it } from 'vitest';
import { ReportedRoutingEvents } from '../../src/routing/reported-routing-events.ts';
import type { RoutingEvent } from '../../src/routing/routing-event.ts';

function nodeDown(input: {
  id: string;
  service?: string;
  from: number;
  to: number;
  ended?: boolean;
}): RoutingEvent {
  return {
    id: input.id,
    type: 'node_down',
    service: input.service ?? 'payments',
    node: 'payments-a',
    cluster: 'c1',
    region: 'eu-west-1',
    startUnixMillis: TEST_EPOCH_UNIX_MILLIS + input.from * 1000,
    endUnixMillis: TEST_EPOCH_UNIX_MILLIS + input.to * 1000,
    ended: input.ended ?? true,
    description: '',
  };
}

/** One `report` call: what it reported, retracted and found changed. */
function report(events: ReportedRoutingEvents, inferred: RoutingEvent[], forgotten: string[] = []) {
  const reported: RoutingEvent[] = [];
  const retracted: string[] = [];
  const changed = events.report(inferred, forgotten, reported, retracted);
  return { reported: reported.map((e) => e.id), retracted, changed };
}

describe('ReportedRoutingEvents', () => {
  it('reports a new event once, with its service and window as what changed', () => {
    const events = new ReportedRoutingEvents();
    const down = nodeDown({ id: 'e1', from: 10, to: 20 });

    const first = report(events, [down]);
    expect(first.reported).toEqual(['e1']);
    expect(first.changed?.services).toEqual(new Set(['payments']));
    expect(first.changed?.windows.get('payments')).toEqual([[down.startUnixMillis, down.endUnixMillis]]);

    expect(report(events, [down])).toEqual({ reported: [], retracted: [], changed: null });
  });

  it('reports an event whose window moved, with its window before and after as changed', () => {
    const events = new ReportedRoutingEvents();
    const before = nodeDown({ id: 'e1', from: 10, to: 20 });
    report(events, [before]);
    const after = nodeDown({ id: 'e1', from: 10, to: 25 });

    const moved = report(events, [after]);

    expect(moved.reported).toEqual(['e1']);
    expect(moved.changed?.windows.get('payments')).toEqual([
      [after.startUnixMillis, after.endUnixMillis],
      [before.startUnixMillis, before.endUnixMillis],
    ]);
  });

  it('retracts an event no longer inferred, but not one forgotten past the horizon', () => {
    const events = new ReportedRoutingEvents();
    report(events, [nodeDown({ id: 'e1', from: 10, to: 20 }), nodeDown({ id: 'e2', from: 30, to: 40 })]);

    const next = report(events, [], ['e2']);

    expect(next.retracted).toEqual(['e1']);
    expect(next.changed?.services).toEqual(new Set(['payments']));
  });
});
