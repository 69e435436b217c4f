import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { resolveServeConfig, silentLogger, startServe } from '@keyscope/analyzer';
import { shuffle } from '@keyscope/simulator';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyzeRecording } from './analyze-recording.ts';

/**
 * keyscope's findings, incidents and routing events are a function of the set of spans, not of
 * the order and batching that delivered them. Each committed recording goes to the embedded
 * service twice, over OTLP/HTTP: once in recorded order, once shuffled with one payload in seven
 * delivered twice; both must end where `keyscope analyze` on the same recording ends.
 */
const RECORDINGS = join(import.meta.dirname, 'recordings');
const SCENARIOS = readdirSync(RECORDINGS)
  .filter((name) => name.endsWith('.jsonl.gz'))
  .map((name) => name.slice(0, -'.jsonl.gz'.length))
  .sort();

/** A payload as the capture receiver kept it: one OTLP/JSON export, and the times of its spans. */
interface Payload {
  readonly body: string;
  readonly firstUnixMillis: number;
  readonly lastUnixMillis: number;
}

/** What two runs are compared by: one line per finding, incident and routing event. */
interface Outcome {
  readonly findings: string[];
  readonly incidents: string[];
  readonly routingEvents: string[];
}

interface FindingJson {
  id: string;
  class: string;
  incidentId: string;
  routing: { event: { type: string; service: string; node: string } | null };
}

interface IncidentJson {
  id: string;
  keys: number;
  title: string;
  advice: string;
}

interface RoutingEventJson {
  type: string;
  service: string;
  node: string;
  start: string;
  end: string;
}

function findingLine(f: FindingJson): string {
  const event = f.routing.event === null ? '-' : `${f.routing.event.type}@${f.routing.event.node}`;
  return `${f.id} ${f.class} ${f.incidentId} ${event}`;
}

/** An incident and the words on-call reads: the same keys must say the same, however they arrived. */
function incidentLine(i: IncidentJson): string {
  return `${i.id} ${i.keys}: ${i.title} | ${i.advice}`;
}

function readPayloads(scenario: string): Payload[] {
  const text = gunzipSync(readFileSync(join(RECORDINGS, `${scenario}.jsonl.gz`))).toString('utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((body) => {
      let first = Number.POSITIVE_INFINITY;
      let last = Number.NEGATIVE_INFINITY;
      const parsed = JSON.parse(body) as {
        resourceSpans: {
          scopeSpans: { spans: { startTimeUnixNano: string; endTimeUnixNano: string }[] }[];
        }[];
      };
      for (const resource of parsed.resourceSpans)
        for (const scope of resource.scopeSpans)
          for (const span of scope.spans) {
            first = Math.min(first, Number(BigInt(span.startTimeUnixNano) / 1_000_000n));
            last = Math.max(last, Number(BigInt(span.endTimeUnixNano) / 1_000_000n));
          }
      return { body, firstUnixMillis: first, lastUnixMillis: last };
    });
}

/** The recorded payloads shuffled, with every seventh one delivered a second time somewhere else. */
function shuffledWithRedelivery(payloads: readonly Payload[], seed: number): Payload[] {
  return shuffle([...payloads, ...payloads.filter((_, i) => i % 7 === 3)], seed);
}

/**
 * Delivers the payloads over OTLP/HTTP to an embedded service, `concurrency` requests at a time
 * (those that arrive together are committed together), and reads what it ends with. The service's
 * clock follows the traffic: it starts at the recording's first span and moves to the newest span
 * sent, so a payload sent after newer ones arrives late, past the allowed lateness. A tick follows
 * each round; after the last, a minute of ticks as serve's timer gives them closes the activity,
 * ends the events and settles the incidents.
 */
async function serveOutcome(payloads: readonly Payload[], concurrency: number): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'keyscope-delivery-'));
  let clock = Math.min(...payloads.map((p) => p.firstUnixMillis));
  const service = await startServe(
    resolveServeConfig({
      api: { port: 0 },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      db: { path: join(dir, 'keyscope.db') },
    }),
    { logger: silentLogger, now: () => clock },
  );
  try {
    const otlpHttp = `http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/traces`;
    for (let i = 0; i < payloads.length; i += concurrency) {
      const round = payloads.slice(i, i + concurrency);
      for (const payload of round) clock = Math.max(clock, payload.lastUnixMillis);
      const answers = await Promise.all(
        round.map(async (payload) => {
          const response = await fetch(otlpHttp, {
            method: 'POST',
            body: payload.body,
            headers: { 'content-type': 'application/json' },
          });
          return { status: response.status, body: await response.text() };
        }),
      );
      // Every span is inside serve's window: none refused, so both deliveries hold the same spans.
      for (const answer of answers) expect(answer).toEqual({ status: 200, body: '{}' });
      service.pipeline.tick(clock);
    }
    for (let second = 0; second < 60; second++) {
      clock += 1_000;
      service.pipeline.tick(clock);
    }
    const api = `http://127.0.0.1:${service.addresses.api.port}/api/v1`;
    return {
      findings: (await list<FindingJson>(`${api}/findings`)).map(findingLine).sort(),
      incidents: (await list<IncidentJson>(`${api}/incidents`)).map(incidentLine).sort(),
      routingEvents: (await list<RoutingEventJson>(`${api}/routing-events`))
        .map((e) => `${e.type} ${e.service} ${e.node} ${e.start} ${e.end}`)
        .sort(),
    };
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every page of one of the API's lists. */
async function list<T>(url: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const response = await fetch(`${url}?limit=500${cursor === null ? '' : `&cursor=${cursor}`}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { items: T[]; nextCursor: string | null };
    items.push(...body.items);
    cursor = body.nextCursor;
    if (cursor === null) return items;
  }
  throw new Error(`more than 100 pages at ${url}`);
}

describe.each(SCENARIOS)('the %s recording, delivered to the embedded service', (scenario) => {
  let analyzed: { findings: string[]; incidents: string[]; events: string[] };
  let inOrder: Outcome;
  let shuffled: Outcome;

  beforeAll(async () => {
    const report = (await analyzeRecording(join(RECORDINGS, `${scenario}.jsonl.gz`))) as unknown as {
      findings: FindingJson[];
      incidents: IncidentJson[];
    };
    analyzed = {
      findings: report.findings.map(findingLine).sort(),
      incidents: report.incidents.map(incidentLine).sort(),
      events: [
        ...new Set(
          report.findings.flatMap(({ routing: { event } }) =>
            event === null ? [] : [`${event.type} ${event.service} ${event.node}`],
          ),
        ),
      ].sort(),
    };
    const payloads = readPayloads(scenario);
    inOrder = await serveOutcome(payloads, 1);
    shuffled = await serveOutcome(shuffledWithRedelivery(payloads, 7), 4);
  }, 120_000);

  it('ends in the findings, incidents and routing events keyscope analyze reports, delivered in recorded order', () => {
    // The recording has something to get wrong: duplicates, grouped into incidents.
    expect(analyzed.findings.length).toBeGreaterThan(0);
    expect(inOrder.findings).toEqual(analyzed.findings);
    expect(inOrder.incidents).toEqual(analyzed.incidents);
    // Every event a finding names is one the service lists.
    const listed = new Set(inOrder.routingEvents.map((line) => line.split(' ').slice(0, 3).join(' ')));
    for (const event of analyzed.events) expect(listed).toContain(event);
  });

  it('ends where in-order delivery ends, delivered shuffled four payloads at a time with one in seven twice', () => {
    expect(shuffled.findings).toEqual(analyzed.findings);
    expect(shuffled.incidents).toEqual(analyzed.incidents);
    expect(shuffled.routingEvents).toEqual(inOrder.routingEvents);
  });
});
