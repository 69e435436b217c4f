import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaClient } from '../../services/analyzer/src/kafka/kafka-client.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';
import { analyzeRecording } from '../lab/analyze-recording.ts';
import { SCENARIOS } from '../lab/scenarios.ts';
import type { MessageProducer } from './support/collector-exporter.ts';
import {
  kafkaEnvironment,
  type RoleProcess,
  startRole,
  stopDeployment,
  stopRole,
} from './support/keyscope-roles.ts';
import type { RoutingEventJson } from './support/outcome.ts';
import { whenEqual } from './support/when-equal.ts';

/**
 * The lab's recordings of real components (test/lab/README.md) through the scaled mode: the
 * Collector's kafka exporter writes each recorded export to the traces topic, `keyscope serve
 * --role all` reads it through ingest, detect and serve, and its API must report what `keyscope
 * analyze` reports on the same file — the same findings, classes and incidents, each finding
 * blaming the same routing event, and the same routing events, each with the incidents citing it.
 *
 * A day after they were made the recordings are older than serve's span window (a retry horizon
 * and `spans.maxLateMillis` behind its clock), and the detectors tick on that clock. So the role
 * runs under libfaketime with its clock a minute past the recording's last span: the spans arrive
 * as a backlog of the last minute would, while the mock broker keeps the real clock (it applies
 * no time retention to the records' timestamps).
 */
const RECORDINGS = fileURLToPath(new URL('../lab/recordings/', import.meta.url));
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
/** Every committed lab recording. */
const RECORDED = SCENARIOS.map((scenario) => scenario.name);

type ApiRoutingEvent = Omit<RoutingEventJson, 'incidentIds'> & { incidentIds?: string[] };

interface ApiFinding {
  id: string;
  class: string;
  cause: string | null;
  executions: number;
  incidentId: string;
  routing: { event: ApiRoutingEvent | null };
}

interface ApiIncident {
  id: string;
  keys: number;
  status: string;
  title: string;
  advice: string;
  openedAt: string;
  lastFindingAt: string;
  routingEvent: ApiRoutingEvent | null;
}

/** What both must agree on, one line each, in a form a failed comparison shows readably. */
interface Report {
  findings: string[];
  incidents: string[];
  routingEvents: string[];
}

function reportOf(
  findings: ApiFinding[],
  incidents: ApiIncident[],
  routingEvents: ApiRoutingEvent[],
): Report {
  const event = (e: ApiRoutingEvent | null) =>
    e === null ? 'no routing event' : `${e.id} ${e.type} ${e.node} ${e.start}..${e.end} ended=${e.ended}`;
  return {
    findings: findings
      .map(
        (f) =>
          `${f.id} ${f.class} cause=${f.cause} ${f.executions} executions, incident ${f.incidentId}, ${event(f.routing.event)}`,
      )
      .sort(),
    incidents: incidents
      .map(
        (i) =>
          `${i.id} ${i.keys} keys ${i.status} ${i.openedAt}..${i.lastFindingAt} ${event(i.routingEvent)}: ${i.title} | ${i.advice}`,
      )
      .sort(),
    routingEvents: routingEvents
      .map((e) => `${event(e)} [${[...(e.incidentIds ?? [])].sort().join(' ')}]`)
      .sort(),
  };
}

/** Every item of a paged list of the API. */
async function listAll<T>(api: string, path: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const query = `limit=500${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const response = await fetch(`${api}${path}?${query}`);
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}`);
    const page = (await response.json()) as { items: T[]; nextCursor: string | null };
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return items;
}

async function apiReport(api: string): Promise<Report> {
  return reportOf(
    await listAll<ApiFinding>(api, '/api/v1/findings'),
    await listAll<ApiIncident>(api, '/api/v1/incidents'),
    await listAll<ApiRoutingEvent>(api, '/api/v1/routing-events'),
  );
}

/** Polls the API until it reports `expected` or the deadline passes; returns what it last reported. */
function apiReportWhenEqual(api: string, expected: Report, timeoutMillis: number): Promise<Report> {
  return whenEqual(() => apiReport(api), expected, timeoutMillis, 1_000);
}

/** The recorded exports, one OTLP/JSON `TracesData` a line, as the capture receiver kept them. */
function recordedExports(scenario: string): Buffer[] {
  const text = gunzipSync(readFileSync(join(RECORDINGS, `${scenario}.jsonl.gz`)));
  const lines: Buffer[] = [];
  for (let start = 0; start < text.length; ) {
    let end = text.indexOf(0x0a, start);
    if (end < 0) end = text.length;
    if (end > start) lines.push(text.subarray(start, end));
    start = end + 1;
  }
  return lines;
}

/** The end of the recording's last span. */
function lastSpanEndUnixMillis(exports: readonly Buffer[]): number {
  let last = 0;
  for (const line of exports) {
    for (const match of line.toString('utf8').matchAll(/"endTimeUnixNano":"(\d+)"/g)) {
      last = Math.max(last, Number(BigInt(match[1]!) / 1_000_000n));
    }
  }
  return last;
}

/** libfaketime's FAKETIME: the process starts at this UTC time and its clock runs on from there. */
function fakeClock(unixMillis: number): Record<string, string> {
  const at = new Date(unixMillis).toISOString().slice(0, 19).replace('T', ' ');
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: `@${at}`, TZ: 'UTC' };
}

let cluster: KafkaCluster;
let producer: MessageProducer & { disconnect(): Promise<void> };
const dir = mkdtempSync(join(tmpdir(), 'keyscope-lab-kafka-'));
const roles: RoleProcess[] = [];

beforeAll(async () => {
  if (!existsSync(LIBFAKETIME))
    throw new Error(`${LIBFAKETIME} is missing: scripts/ensure-test-tools.sh installs libfaketime`);
  // Each recording is about 3.5 MiB of OTLP/JSON, on one traces partition (read in the order
  // recorded, as analyze reads the file) under the mock broker's 5 MiB.
  const topics: Record<string, number> = {};
  for (const scenario of RECORDED) {
    topics[`traces-${scenario}`] = 1;
    topics[`attempts-${scenario}`] = 4;
    topics[`incidents-${scenario}`] = 2;
  }
  cluster = await startKafkaCluster(topics);
  const kafka = createKafkaClient({ brokers: cluster.brokers, clientId: 'collector' }, 'test', silentLogger);
  const kafkaProducer = kafka.producer();
  await kafkaProducer.connect();
  producer = kafkaProducer;
}, 60_000);

afterAll(() => stopDeployment({ roles, producer, cluster, dir }), 60_000);

describe('lab recordings through the Kafka roles', () => {
  it.each(RECORDED)(
    'report on %s the findings, incidents and routing events keyscope analyze reports',
    async (scenario) => {
      const analyzed = (await analyzeRecording(join(RECORDINGS, `${scenario}.jsonl.gz`))) as unknown as {
        findings: ApiFinding[];
        incidents: ApiIncident[];
        routingEvents: ApiRoutingEvent[];
      };
      const expected = reportOf(analyzed.findings, analyzed.incidents, analyzed.routingEvents);
      // The recording has something of each to compare.
      expect(expected.findings.length).toBeGreaterThan(10);
      expect(expected.routingEvents.length).toBeGreaterThan(0);
      expect(analyzed.findings.some((finding) => finding.routing.event !== null)).toBe(true);

      const exports = recordedExports(scenario);
      const topics = {
        traces: cluster.topic(`traces-${scenario}`),
        attempts: cluster.topic(`attempts-${scenario}`),
        incidents: cluster.topic(`incidents-${scenario}`),
      };
      mkdirSync(join(dir, scenario));
      const role = await startRole(
        'all',
        {
          ...kafkaEnvironment(cluster, topics),
          ...fakeClock(lastSpanEndUnixMillis(exports) + 60_000),
          KEYSCOPE_KAFKA_TRACES_ENCODING: 'otlp_json',
          KEYSCOPE_KAFKA_STATE_DIR: join(dir, scenario, 'partitions'),
          KEYSCOPE_DB_PATH: join(dir, scenario, 'serve.db'),
        },
        60_000,
      );
      roles.push(role);
      // The kafka exporter with encoding otlp_json: one unkeyed message per export, the OTLP/JSON
      // `TracesData` the capture receiver recorded.
      for (let i = 0; i < exports.length; i += 20) {
        await producer.send({
          topic: topics.traces,
          acks: 1,
          messages: exports.slice(i, i + 20).map((value) => ({ key: null, value })),
        });
      }
      const actual = await apiReportWhenEqual(role.api, expected, 90_000);
      expect(role.child.exitCode, role.output()).toBeNull();
      await stopRole(role);
      expect(actual).toEqual(expected);
    },
    150_000,
  );
});
