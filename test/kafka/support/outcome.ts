/**
 * What a keyscope API says about a run, in a form two runs can be compared by: one line per
 * finding (id, class, incident, executions, attempts of its key) and per incident (id, keys,
 * status, title). A lost attempt, a doubled one, a finding in another incident or an incident
 * counting a key twice all change a line.
 */
export interface Outcome {
  findings: string[];
  incidents: string[];
}

export async function outcomeOf(api: string): Promise<Outcome> {
  const findings = (await (await fetch(`${api}/api/v1/findings?limit=500`)).json()) as {
    items: { id: string; class: string; incidentId: string; executions: number; attempts: unknown[] }[];
  };
  const incidents = (await (await fetch(`${api}/api/v1/incidents?limit=500`)).json()) as {
    items: { id: string; keys: number; status: string; title: string }[];
  };
  return {
    findings: findings.items
      .map((f) => `${f.id} ${f.class} ${f.incidentId} ${f.executions} ${f.attempts.length}`)
      .sort(),
    incidents: incidents.items.map((i) => `${i.id} ${i.keys} ${i.status} ${i.title}`).sort(),
  };
}

/**
 * Polls until the API's outcome equals `expected` or the deadline passes, and returns the last
 * one seen: the scaled mode converges (Kafka, detectors' ticks, materialization), it does not
 * answer at once.
 */
export async function outcomeWhenEqual(
  api: string,
  expected: Outcome,
  timeoutMillis: number,
): Promise<Outcome> {
  const deadline = Date.now() + timeoutMillis;
  let last = await outcomeOf(api);
  while (Date.now() < deadline && JSON.stringify(last) !== JSON.stringify(expected)) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    last = await outcomeOf(api);
  }
  return last;
}
