import { whenEqual } from './when-equal.ts';

/**
 * What a keyscope API says about a run, in a form two runs can be compared by: one line per
 * finding (id, class, incident, executions, attempts of its key), per incident (id, keys, status,
 * title) and per routing event (id, type, node, window, the incidents citing it). A lost attempt,
 * a doubled one, a finding in another incident, an incident counting a key twice, or a routing
 * event missing, doubled or with another window all change a line.
 */
export interface Outcome {
  findings: string[];
  incidents: string[];
  routingEvents: string[];
}

/** A routing event as `GET /api/v1/routing-events` lists it; findings and incidents embed it without `incidentIds`. */
export interface RoutingEventJson {
  id: string;
  type: string;
  node: string;
  start: string;
  end: string;
  ended: boolean;
  incidentIds: string[];
}

export async function outcomeOf(api: string): Promise<Outcome> {
  const findings = (await (await fetch(`${api}/api/v1/findings?limit=500`)).json()) as {
    items: { id: string; class: string; incidentId: string; executions: number; attempts: unknown[] }[];
  };
  const incidents = (await (await fetch(`${api}/api/v1/incidents?limit=500`)).json()) as {
    items: { id: string; keys: number; status: string; title: string }[];
  };
  const routingEvents = (await (await fetch(`${api}/api/v1/routing-events?limit=500`)).json()) as {
    items: RoutingEventJson[];
  };
  return {
    findings: findings.items
      .map((f) => `${f.id} ${f.class} ${f.incidentId} ${f.executions} ${f.attempts.length}`)
      .sort(),
    incidents: incidents.items.map((i) => `${i.id} ${i.keys} ${i.status} ${i.title}`).sort(),
    routingEvents: routingEvents.items
      .map(
        (e) =>
          `${e.id} ${e.type} ${e.node} ${e.start}..${e.end} ended=${e.ended} [${[...e.incidentIds].sort().join(' ')}]`,
      )
      .sort(),
  };
}

/** Polls until the API's outcome equals `expected` or the deadline passes; returns the last one seen. */
export function outcomeWhenEqual(api: string, expected: Outcome, timeoutMillis: number): Promise<Outcome> {
  return whenEqual(() => outcomeOf(api), expected, timeoutMillis, 500);
}
