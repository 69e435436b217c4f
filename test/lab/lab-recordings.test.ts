import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SpanKind } from '@keyscope/otlp';
import { afterAll, describe, expect, it } from 'vitest';
import { analyzeRecording } from './analyze-recording.ts';
import { SCENARIOS } from './scenarios.ts';
import { type LabScore, scoreReport, scoreTable } from './score.ts';
import { decisionSpans, type LabTruth, readRecording, serverSpanIds } from './truth.ts';

const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');
const scores: LabScore[] = [];

afterAll(() => {
  // The baseline the detector is measured against: attribution and suspected duplicates included.
  if (scores.length > 0) console.log(`lab baseline\n${scoreTable(scores)}`);
});

describe.each(SCENARIOS.map((scenario) => [scenario.name, scenario] as const))(
  'the %s recording',
  (name, scenario) => {
    const recording = join(RECORDINGS, `${name}.jsonl.gz`);
    const truth = JSON.parse(readFileSync(join(RECORDINGS, `${name}.truth.json`), 'utf8')) as LabTruth;

    it('has a truth file that lists every key two decision spans of the recording executed', () => {
      const spans = readRecording(recording);
      const recordedServers = serverSpanIds(spans);
      const decisions = decisionSpans(spans);
      const recordedDecisions = new Set(decisions.map((span) => span.spanId));
      const misses = new Map<string, number>();
      for (const span of decisions) {
        const key = span.attributes['idempotency.key'];
        if (typeof key === 'string' && span.attributes['idempotency.outcome'] === 'miss') {
          misses.set(key, (misses.get(key) ?? 0) + 1);
        }
      }
      const twiceInSpans = [...misses].filter(([, count]) => count >= 2).map(([key]) => key);
      const duplicates = new Map(truth.duplicates.map((duplicate) => [duplicate.key, duplicate]));

      expect(twiceInSpans.filter((key) => !duplicates.has(key))).toEqual([]);
      for (const duplicate of truth.duplicates) {
        for (const execution of duplicate.executions) {
          expect(execution.visible).toBe(recordedServers.has(execution.spanId));
          // A truth file from before child decisions names none: its decision was the SERVER span's.
          expect(execution.decisionVisible ?? execution.visible).toBe(
            recordedDecisions.has(execution.decisionSpanId ?? execution.spanId),
          );
        }
      }
      // Every execution the ledger has is a miss in the spans unless its decision span was lost.
      const lost = new Set(
        truth.lostFirstExecutions.filter((entry) => !entry.decisionVisible).map((entry) => entry.key),
      );
      for (const key of twiceInSpans) expect(lost.has(key)).toBe(false);
      expect(truth.charges).toBeGreaterThan(100);
    });

    // Truth files recorded before the lab logged answers and sends (README, "Recordings") have none to check.
    it.runIf(truth.clientTimeoutMillis !== undefined)(
      'has a truth file that says how the scenario ran: its setup, each execution’s answer and the client’s sends',
      () => {
        expect(truth).toMatchObject({
          proxy: scenario.proxy.kind,
          decisionSpan: scenario.decisionSpan,
          storeScope: scenario.storeScope,
          ttlMillis: scenario.ttlMillis,
          clientTimeoutMillis: scenario.traffic.timeoutMillis,
          clientMaxSends: scenario.traffic.maxSends,
        });
        const servers = new Map(
          readRecording(recording)
            .filter((span) => span.kind === SpanKind.SERVER)
            .map((span) => [span.spanId, span]),
        );
        for (const duplicate of truth.duplicates) {
          const sends = duplicate.sends ?? [];
          expect(sends.map((send) => send.send)).toEqual(sends.map((_, index) => index));
          expect(sends.length).toBeLessThanOrEqual(scenario.traffic.maxSends);
          for (const execution of duplicate.executions) {
            expect(execution.send).not.toBeNull();
            const send = sends[execution.send!]!;
            expect(send.startUnixMillis).toBeLessThanOrEqual(execution.receivedUnixMillis);
            // An execution answered, or its caller gone first, or neither when its node died first.
            if (execution.answeredUnixMillis !== null) {
              expect(execution.callerLeftUnixMillis).toBeNull();
              expect(execution.answeredUnixMillis).toBeGreaterThanOrEqual(execution.chargedUnixMillis);
            }
            if (execution.handlerEndedUnixMillis === null) expect(execution.answeredUnixMillis).toBeNull();
            // The SERVER span's status says the same: the node's 201 when it answered, the
            // instrumentation's 200 (no response sent) when the caller's socket closed first.
            const server = servers.get(execution.spanId);
            if (server !== undefined && execution.handlerEndedUnixMillis !== null)
              expect(server.attributes['http.response.status_code']).toBe(
                execution.answeredUnixMillis === null ? 200 : 201,
              );
          }
        }
      },
    );

    it.runIf(scenario.decisionSpan === 'child')(
      'records the decision on an idempotency.check span under the SERVER span, which carries the key and the route',
      () => {
        const spans = readRecording(recording);
        const servers = spans.filter(
          (span) => span.kind === SpanKind.SERVER && span.resource.attributes['service.name'] === 'payments',
        );
        expect(servers.length).toBeGreaterThan(100);
        for (const server of servers) {
          expect(typeof server.attributes['idempotency.key']).toBe('string');
          expect(server.attributes['http.route']).toBe('/payments');
          expect(server.attributes['idempotency.outcome']).toBeUndefined();
        }
        const byId = new Map(spans.map((span) => [span.spanId, span]));
        const checks = decisionSpans(spans);
        expect(checks.length).toBeGreaterThanOrEqual(servers.length);
        const store = scenario.storeScope === 'cluster' ? 'payments/cluster:lab' : undefined;
        for (const check of checks) {
          expect(check.kind).toBe(SpanKind.INTERNAL);
          expect(check.name).toBe('idempotency.check');
          expect(check.attributes).toMatchObject({
            'idempotency.key': expect.any(String),
            'idempotency.outcome': expect.stringMatching(/^(miss|hit|in_progress|mismatch)$/),
            'idempotency.scope': scenario.storeScope,
            'idempotency.store':
              store ?? `payments/node:${String(check.resource.attributes['service.instance.id'])}`,
          });
          expect(check.resource.attributes['k8s.cluster.name']).toBe('lab');
          // The check lasts as long as the store's answer, not the work.
          expect(check.endTimeUnixMillis - check.startTimeUnixMillis).toBeLessThan(100);
          const parent = byId.get(check.parentSpanId);
          if (parent !== undefined) {
            expect(parent.kind).toBe(SpanKind.SERVER);
            expect(parent.traceId).toBe(check.traceId);
            expect(parent.attributes['idempotency.key']).toBe(check.attributes['idempotency.key']);
          }
        }
      },
    );

    it('is analysed by keyscope into every duplicate both of whose executions are in the spans, and no key that ran once', async () => {
      const score = scoreReport(truth, await analyzeRecording(recording));
      scores.push(score);
      expect(score.missedVisibleKeys).toEqual([]);
      expect(score.falseKeys).toEqual([]);
      expect(score.found).toBeGreaterThanOrEqual(score.visibleDuplicates);
    }, 120_000);
  },
);
