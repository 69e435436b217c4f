import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyzeRecording } from './analyze-recording.ts';
import { SCENARIOS } from './scenarios.ts';
import { DUPLICATE_CLASSES, EXPECTED_EVENT_TYPES } from './score.ts';
import type { LabTruth, TruthDuplicate, TruthExecution } from './truth.ts';

/**
 * What an incident says, sentence by sentence, held to what really happened: for each incident of
 * each lab recording, the numbers its title and advice state are derived again from the ledger
 * and the client's log (the truth file) — keys, stores per key, the route, the routing event, the
 * callers' timeout, first-execution durations where the spans can know them — and the advice's
 * sentences are checked against the scenario's setup. The text is `keyscope analyze`'s, which
 * serve and the Kafka roles are held to word alike (delivery-independence.test.ts,
 * test/kafka/lab-recordings.test.ts).
 */
const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');

interface ReportIncident {
  id: string;
  class: string;
  keys: number;
  title: string;
  advice: string;
  adviceSentences: string[];
  routingEvent: { type: string; node: string } | null;
}

interface ReportFinding {
  key: string;
  class: string;
  incidentId: string;
}

interface Report {
  findings: ReportFinding[];
  incidents: ReportIncident[];
}

const reports = new Map<string, { report: Report; truth: LabTruth }>();

beforeAll(async () => {
  for (const scenario of SCENARIOS) {
    const report = (await analyzeRecording(
      join(RECORDINGS, `${scenario.name}.jsonl.gz`),
    )) as unknown as Report;
    const truth = JSON.parse(
      readFileSync(join(RECORDINGS, `${scenario.name}.truth.json`), 'utf8'),
    ) as LabTruth;
    reports.set(scenario.name, { report, truth });
  }
}, 180_000);

/** The incident's keys' truth: each key with the duplicate the ledger holds for it (or none). */
function keysOf(
  name: string,
  incident: ReportIncident,
): { key: string; duplicate: TruthDuplicate | undefined }[] {
  const { report, truth } = reports.get(name)!;
  const duplicates = new Map(truth.duplicates.map((d) => [d.key, d]));
  return report.findings
    .filter((f) => f.incidentId === incident.id)
    .map((f) => ({ key: f.key, duplicate: duplicates.get(f.key) }));
}

/** The executions keyscope could count: those whose decision span reached the recording. */
function seenExecutions(duplicate: TruthDuplicate): TruthExecution[] {
  return duplicate.executions.filter((e) => e.decisionVisible ?? e.visible);
}

/**
 * How long an execution really ran, from the ledger: to its handler's end (it goes on after its
 * caller leaves), else to its answer or its caller's leaving; null when its node died first.
 */
function realDurationMillis(execution: TruthExecution): number | null {
  const end =
    execution.handlerEndedUnixMillis ?? execution.answeredUnixMillis ?? execution.callerLeftUnixMillis;
  return end === null || end === undefined ? null : end - execution.receivedUnixMillis;
}

function nearestRank(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1]!;
}

/** "All 13 keys were", "The key was", "2 of 13 keys were" before `rest`: the count it states. */
function statedCount(advice: string, rest: string): number | null {
  const escaped = rest.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(
    `(?:All (\\d+) \\w+[\\w ]*? were|The [\\w ]+? was|(\\d+) of \\d+ [\\w ]+? were?) ${escaped}`,
  ).exec(advice);
  if (match === null) return null;
  return Number(match[1] ?? match[2] ?? 1);
}

const FAILURE_EVENT_TEXT: Record<string, string> = {
  node_down: 'node down',
  latency_spike: 'latency spike',
  error_spike: 'error spike',
};

describe.each(SCENARIOS.map((s) => s.name))('what the incidents of the %s recording say', (name) => {
  it('title each incident by the route and count its keys as the incident holds them', () => {
    const { report } = reports.get(name)!;
    expect(report.incidents.length).toBeGreaterThan(0);
    for (const incident of report.incidents) {
      const keys = keysOf(name, incident).length;
      expect(incident.keys, incident.title).toBe(keys);
      expect(
        incident.title.startsWith(`payments POST /payments: ${keys === 1 ? '1 key' : `${keys} keys`} `),
      ).toBe(true);
      const event = incident.routingEvent;
      if (event !== null)
        expect(incident.title).toContain(
          ` during ${FAILURE_EVENT_TEXT[event.type] ?? event.type} of ${event.node}`,
        );
    }
  });

  it("name the failure that really broke each duplicate's retry path, for nine in ten of its keys", () => {
    const { report, truth } = reports.get(name)!;
    const windows = new Map(truth.windows.map((w) => [w.id, w]));
    for (const incident of report.incidents) {
      if (!DUPLICATE_CLASSES.has(incident.class) || incident.routingEvent === null) continue;
      const keys = keysOf(name, incident);
      const matching = keys.filter(({ duplicate }) => {
        const window =
          duplicate?.windowId === null || duplicate === undefined
            ? undefined
            : windows.get(duplicate.windowId);
        return (
          window !== undefined &&
          window.node === incident.routingEvent!.node &&
          EXPECTED_EVENT_TYPES[window.type].includes(incident.routingEvent!.type)
        );
      });
      expect(matching.length / keys.length, incident.title).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('state how many stores each key executed in as the ledger and the spans hold them', () => {
    const { report, truth } = reports.get(name)!;
    for (const incident of report.incidents) {
      if (incident.class !== 'cross_store_duplicate') continue;
      const match = /(?:Each key|The key) executed in (\d+)(?: to (\d+))? different dedup stores/.exec(
        incident.advice,
      );
      expect(match, incident.advice).not.toBeNull();
      const counts = keysOf(name, incident).map(({ duplicate }) => {
        // A node's own store per node; one store for a cluster's.
        const seen = seenExecutions(duplicate!);
        return truth.storeScope === 'cluster' ? 1 : new Set(seen.map((e) => e.node)).size;
      });
      expect([Number(match![1]), Number(match![2] ?? match![1])]).toEqual([
        Math.min(...counts),
        Math.max(...counts),
      ]);
    }
  });

  it("state the callers' timeout as the client had it, and count the keys retried after each kind of failed send", () => {
    const { report, truth } = reports.get(name)!;
    const timeoutMillis =
      truth.clientTimeoutMillis ?? SCENARIOS.find((s) => s.name === name)!.traffic.timeoutMillis;
    for (const incident of report.incidents) {
      const wait = /timed out, at (\d+\.\d) s/.exec(incident.advice);
      if (wait !== null)
        expect(Math.abs(Number(wait[1]) * 1000 - timeoutMillis)).toBeLessThanOrEqual(timeoutMillis * 0.1);
      if (!DUPLICATE_CLASSES.has(incident.class)) continue;
      const keys = keysOf(name, incident).map(({ duplicate }) => duplicate!);
      if (keys.some((duplicate) => duplicate.sends === undefined)) continue;
      // The send that carried the first execution the spans show, as the client saw it end.
      const endings = keys.map((duplicate) => {
        const first = seenExecutions(duplicate)[0]!;
        const send = duplicate.sends!.find((s) => s.send === first.send);
        return send === undefined ? 'unknown' : send.result;
      });
      const timedOut = endings.filter((result) => result === 'timeout').length;
      const reset = endings.filter((result) => result === 'error').length;
      expect(
        statedCount(incident.advice, "retried after the caller's send timed out") ?? 0,
        incident.advice,
      ).toBe(timedOut);
      expect(
        statedCount(incident.advice, 'retried after the connection was reset') ?? 0,
        incident.advice,
      ).toBe(reset);
    }
  });

  it("state first-execution durations the spans can know, within 10% of the ledger's or as a lower bound, and the rest unknown", () => {
    const { report } = reports.get(name)!;
    for (const incident of report.incidents) {
      if (!DUPLICATE_CLASSES.has(incident.class)) continue;
      const keys = keysOf(name, incident).map(({ duplicate }) => duplicate!);
      const firsts = keys.map((duplicate) => seenExecutions(duplicate)[0]!);
      const lost = firsts.filter((e) => e.decisionVisible === true && !e.visible).length;
      expect(statedCount(incident.advice, 'of unknown duration') ?? 0, incident.advice).toBe(lost);
      const stated = /First executions on (\S+) ran (at least )?(\d+\.\d) s at p90/.exec(incident.advice);
      if (stated === null) {
        expect(firsts.filter((e) => e.visible).length, incident.advice).toBe(0);
        continue;
      }
      const [, node, atLeast, p90] = stated;
      const real = firsts
        .filter((e) => e.visible && e.node === node)
        .map(realDurationMillis)
        .filter((d): d is number => d !== null);
      if (real.length === 0) continue;
      const truthP90 = nearestRank(real, 0.9);
      // Summarized to the nearest 100 ms.
      const slack = truthP90 * 0.1 + 50;
      if (atLeast === undefined)
        expect(Math.abs(Number(p90) * 1000 - truthP90), incident.advice).toBeLessThanOrEqual(slack);
      else expect(truthP90, incident.advice).toBeGreaterThanOrEqual(Number(p90) * 1000 - slack);
    }
  });

  it('advise only what the setup bears out', () => {
    const { report, truth } = reports.get(name)!;
    for (const incident of report.incidents) {
      const said = incident.adviceSentences;
      if (incident.class === 'cross_store_duplicate') {
        // Node stores behind one cluster's balancer: widen to the cluster, never "check the shared store".
        expect(said).toContain('widen_scope');
        expect(said).not.toContain('check_shared_store');
      }
      if (
        incident.class === 'same_store_duplicate' &&
        truth.ttlMillis !== undefined &&
        truth.ttlMillis < 60_000
      )
        expect(said).toContain('ttl_expired');
      if (said.includes('slow_node_before_ttl')) {
        const windows = new Map(truth.windows.map((w) => [w.id, w]));
        const count = /The first executions of (?:all )?(\d+)(?: of \d+)? keys ran on/.exec(incident.advice);
        const inWindow = keysOf(name, incident).filter(
          ({ duplicate }) =>
            duplicate?.windowId !== null &&
            duplicate !== undefined &&
            windows.get(duplicate.windowId)?.node === incident.routingEvent?.node,
        ).length;
        expect(Number(count?.[1]), incident.advice).toBe(inWindow);
      }
    }
  });
});
