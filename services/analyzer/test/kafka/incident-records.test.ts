import type { Finding, Incident, RoutingEvent } from '@keyscope/detector';
import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import {
  decodeIncidentRecord,
  encodeIncidentRecord,
  type IncidentRecord,
  MAX_RECORD_BYTES,
  recordsOfChanges,
  recordsOfTakeover,
} from '../../src/kafka/incident-records.ts';
import { duplicateOf, nodeDownUntil } from './detected-changes.ts';

/** A real finding and incident: a key executed in two node stores. */
function duplicate(): { finding: Finding; incident: Incident } {
  const changes = duplicateOf('k1');
  return { finding: changes.findings[0]!, incident: changes.incidents[0]! };
}

/** A real routing event: node b silent from second 10 to 20 while a serves. */
function nodeDown(): RoutingEvent {
  return nodeDownUntil(20)[0]!;
}

function roundTrip(record: IncidentRecord): IncidentRecord {
  const { key, value } = encodeIncidentRecord(record);
  return decodeIncidentRecord(Buffer.from(key), value);
}

describe('incidents topic records', () => {
  it('keys findings by id and incident parts by incident id and attempts partition', () => {
    const { finding, incident } = duplicate();
    expect(encodeIncidentRecord({ type: 'finding', id: finding.id, finding }).key).toBe(
      `finding/${finding.id}`,
    );
    expect(encodeIncidentRecord({ type: 'incident', id: incident.id, partition: 7, incident }).key).toBe(
      `incident/${incident.id}/7`,
    );
    expect(encodeIncidentRecord({ type: 'scope', partition: 7, scope: [] }).key).toBe('scope/7');
    expect(
      encodeIncidentRecord({ type: 'parts', partition: 7, incidentIds: [], sinceUnixMillis: 0 }).key,
    ).toBe('parts/7');
    const event = nodeDown();
    expect(encodeIncidentRecord({ type: 'routing-event', id: event.id, routingEvent: event }).key).toBe(
      `routing-event/${event.id}`,
    );
  });

  it("publishes a takeover as the partition's incident parts, then the list of their ids", () => {
    const { incident } = duplicate();
    const records = recordsOfTakeover([incident], 5, 1_000);
    expect(records.map((record) => encodeIncidentRecord(record).key)).toEqual([
      `incident/${incident.id}/5`,
      'parts/5',
    ]);
    expect(records[1]).toEqual({
      type: 'parts',
      partition: 5,
      incidentIds: [incident.id],
      sinceUnixMillis: 1_000,
    });
  });

  it('round-trips values, and retractions as tombstones', () => {
    const { finding, incident } = duplicate();
    const records: IncidentRecord[] = [
      { type: 'finding', id: finding.id, finding },
      { type: 'finding', id: finding.id, finding: null },
      { type: 'incident', id: incident.id, partition: 2, incident },
      { type: 'incident', id: incident.id, partition: 2, incident: null },
      { type: 'scope', partition: 2, scope: [] },
      { type: 'parts', partition: 2, incidentIds: [incident.id], sinceUnixMillis: 1_000 },
      { type: 'routing-event', id: nodeDown().id, routingEvent: nodeDown() },
      { type: 'routing-event', id: nodeDown().id, routingEvent: null },
    ];
    for (const record of records) expect(roundTrip(record)).toEqual(record);
    expect(encodeIncidentRecord({ type: 'finding', id: finding.id, finding: null }).value).toBeNull();
  });

  it("publishes a detector call's changes from its partition, retractions first", () => {
    const { finding, incident } = duplicate();
    const event = nodeDown();
    const records = recordsOfChanges(
      {
        findings: [finding],
        retractedFindingIds: ['f_old'],
        incidents: [incident],
        retractedIncidentIds: ['inc_old'],
        routingEvents: [event],
        retractedRoutingEventIds: ['re_old'],
      },
      4,
    );
    expect(records.map((record) => encodeIncidentRecord(record).key)).toEqual([
      'routing-event/re_old',
      `routing-event/${event.id}`,
      'finding/f_old',
      `finding/${finding.id}`,
      'incident/inc_old/4',
      `incident/${incident.id}/4`,
    ]);
  });

  it('refuses keys and values keyscope did not write with KS_KAFKA_RECORD_INVALID', () => {
    const { finding } = duplicate();
    const bad: [string | null, string | null][] = [
      [null, null],
      ['other/x', null],
      ['finding/', null],
      ['incident/x/notanumber', null],
      ['scope/-1', null],
      [`finding/${finding.id}`, 'not json'],
      [`finding/${finding.id}`, '{"v":2,"finding":{}}'],
      ['finding/f_other', JSON.stringify({ v: 1, finding })],
      ['incident/inc_x/1', JSON.stringify({ v: 1, incident: { id: 'inc_y' } })],
      ['scope/1', '{"v":1,"scope":{}}'],
      ['parts/1', null],
      ['parts/1', '{"v":1,"incidentIds":[3],"sinceUnixMillis":0}'],
      ['parts/1', '{"v":1,"incidentIds":[]}'],
      ['routing-event/', null],
      ['routing-event/re_x/1', null],
      ['routing-event/re_x', '{"v":1,"routingEvent":"node_down"}'],
      ['routing-event/re_x', JSON.stringify({ v: 1, routingEvent: { ...nodeDown(), id: 're_y' } })],
      [
        'routing-event/re_x',
        JSON.stringify({ v: 1, routingEvent: { ...nodeDown(), id: 're_x', type: 'reboot' } }),
      ],
      [
        'routing-event/re_x',
        JSON.stringify({ v: 1, routingEvent: { ...nodeDown(), id: 're_x', endUnixMillis: 'later' } }),
      ],
    ];
    for (const [key, value] of bad) {
      let code: string | undefined;
      try {
        decodeIncidentRecord(
          key === null ? null : Buffer.from(key),
          value === null ? null : Buffer.from(value),
        );
      } catch (error) {
        code = (error as { code?: string }).code;
      }
      expect(code, `${key} ${value}`).toBe('KS_KAFKA_RECORD_INVALID');
    }
  });
});

describe('a finding of a hot key', () => {
  it('is published within the record limit with its first and last attempts', () => {
    const { finding } = duplicate();
    const many = Array.from({ length: 6_000 }, (_, i) =>
      server({ key: 'k1', node: i % 2 === 0 ? 'a' : 'b', at: i, spanId: i.toString(16).padStart(16, '0') }),
    );
    const hot = { ...finding, attempts: many };
    const { value } = encodeIncidentRecord({ type: 'finding', id: hot.id, finding: hot });
    expect(value!.length).toBeLessThanOrEqual(MAX_RECORD_BYTES);
    const decoded = decodeIncidentRecord(Buffer.from(`finding/${hot.id}`), value);
    const attempts = decoded.type === 'finding' ? decoded.finding!.attempts : [];
    expect(attempts.length).toBeGreaterThan(100);
    expect(attempts[0]).toEqual(many[0]);
    expect(attempts.at(-1)).toEqual(many.at(-1));
  });
});
