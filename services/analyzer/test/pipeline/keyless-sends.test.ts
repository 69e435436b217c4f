import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ClientAttempt, defaultMapping } from '@keyscope/attempts';
import { defaultDetectorConfig } from '@keyscope/detector';
import { decodeTraces, encodeTraces, type Span, SpanKind } from '@keyscope/otlp';
import { scenarios, simulate, splitIntoPayloads } from '@keyscope/simulator';
import { KeyscopeStore } from '@keyscope/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Analysis } from '../../src/analyze/analysis.ts';
import { defaultServeConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { DetectionPipeline } from '../../src/pipeline/detection-pipeline.ts';

const KEY_HEADER = 'http.request.header.idempotency-key';

/**
 * A proxy retries a POST on another node when a try times out after 1 s; the client gives up
 * after 2 s. Its HTTP instrumentation records the key only once a response arrived, so the send
 * that timed out has a keyless CLIENT span, which only its server spans tie to the key.
 */
const scenario = scenarios.proxyTimeoutRetry();
const { spans, truth } = simulate(scenario, { seed: 11 });
const timeoutMillis = scenario.services[0]!.client.timeoutMillis;

/** The key of each trace, from the spans that carry one: the simulator's one key per request series. */
const keyOfTrace = new Map<string, string>();
for (const span of spans) {
  const header = span.attributes[KEY_HEADER];
  if (Array.isArray(header)) keyOfTrace.set(span.traceId, header[0] as string);
}
/** Span ids that a SERVER span names as its parent. */
const parentsOfServers = new Set(
  spans.filter((s) => s.kind === SpanKind.SERVER).map((s) => `${s.traceId}/${s.parentSpanId}`),
);
/** The timed-out sends of the simulation that reached a server, and the key of their request. */
const timedOut = new Map<string, string>();
for (const span of spans) {
  const id = `${span.traceId}/${span.spanId}`;
  const key = keyOfTrace.get(span.traceId);
  if (
    span.kind === SpanKind.CLIENT &&
    span.attributes[KEY_HEADER] === undefined &&
    span.attributes['error.type'] === 'timeout' &&
    key !== undefined &&
    parentsOfServers.has(id)
  ) {
    timedOut.set(id, key);
  }
}

/**
 * The run as two exporters send it: the callers' CLIENT spans and everything else in payloads of
 * their own, one of the two streams `lagPayloads` behind the other.
 */
function exports(lagging: 'clients' | 'servers', lagPayloads: number): Span[][] {
  const clients = splitIntoPayloads(
    spans.filter((s) => s.kind === SpanKind.CLIENT),
    30,
    5,
  );
  const others = splitIntoPayloads(
    spans.filter((s) => s.kind !== SpanKind.CLIENT),
    30,
    6,
  );
  const [early, late] = lagging === 'clients' ? [others, clients] : [clients, others];
  const payloads: Span[][] = [];
  for (let i = 0; i < early.length + lagPayloads; i++) {
    if (i < early.length) payloads.push(early[i]!);
    if (i >= lagPayloads && i - lagPayloads < late.length) payloads.push(late[i - lagPayloads]!);
  }
  return payloads;
}

describe.each([
  ['after their server spans', 'clients'],
  ['before their server spans', 'servers'],
] as const)('keyless sends arriving %s', (_, lagging) => {
  let dir: string;
  let store: KeyscopeStore;
  let pipeline: DetectionPipeline;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keyscope-keyless-'));
    store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
    const lastEnd = spans.reduce((end, s) => Math.max(end, s.endTimeUnixMillis), 0);
    pipeline = new DetectionPipeline({
      mapping: defaultMapping(),
      spans: defaultServeConfig().spans,
      detectorConfig: defaultDetectorConfig(),
      store,
      logger: silentLogger,
      now: () => lastEnd + 1000,
    });
    for (const payload of exports(lagging, 4)) {
      // Through the receivers' decode options: keyless CLIENT spans come with their ids.
      await pipeline.consumeSpans(decodeTraces(encodeTraces(payload), pipeline.decodeOptions));
    }
    pipeline.tick(lastEnd + 1000);
  });

  afterAll(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores every timed-out send as a client attempt of its key, linked from its server span', () => {
    expect(timedOut.size).toBeGreaterThanOrEqual(50);
    const keys = new Set(timedOut.values());
    const linked = new Map<string, string>();
    for (const key of keys) {
      for (const attempt of store.attemptsOfKey(key)) {
        if (attempt.kind === 'client' && attempt.keyFrom === 'child') {
          linked.set(`${attempt.traceId}/${attempt.spanId}`, attempt.key);
          expect(attempt).toMatchObject({ statusCode: 0, error: 'timeout' });
          expect(attempt.endUnixMillis - attempt.startUnixMillis).toBeCloseTo(timeoutMillis, 3);
        }
      }
    }
    expect(linked).toEqual(timedOut);
    const counts = pipeline.counts();
    expect(counts.sendLinks).toMatchObject({ evicted: 0, expired: 0 });
    expect(counts.sendLinks.linked).toBe(timedOut.size);
  });

  it('gives every finding of those keys the caller’s wait, the timed-out send’s duration', () => {
    const keys = new Set(timedOut.values());
    const findings = store.findings.list({}, { limit: 1000 }).items.filter((f) => keys.has(f.key));
    // Some keys' proxy retry answered within the client's wait: those are not duplicates there.
    expect(findings.length).toBeGreaterThanOrEqual(40);
    const truthByKey = new Map(truth.keys.map((k) => [k.key, k]));
    for (const finding of findings) {
      const sends = finding.attempts.filter(
        (a): a is ClientAttempt => a.kind === 'client' && a.keyFrom === 'child',
      );
      expect(sends.length).toBeGreaterThanOrEqual(1);
      expect(finding.callerWaitMillis).toBeCloseTo(timeoutMillis, 3);
      expect(finding.outlivedCallerWait).not.toBeNull();
      // The proxy's retry is still named: a send reaching two servers is the proxy's doing.
      expect(finding.retriedBy).toBe(truthByKey.get(finding.key)!.retriedBy);
    }
  });
});

describe('keyless sends in an analyzed archive', () => {
  it('are linked to their keys as in serve, and give the findings the caller’s wait', () => {
    const analysis = new Analysis(defaultMapping(), defaultDetectorConfig());
    for (const payload of exports('clients', 4)) {
      analysis.ingest(decodeTraces(encodeTraces(payload), analysis.decodeOptions));
    }
    const { findings } = analysis.finish();
    const keys = new Set(timedOut.values());
    const linked = new Map<string, string>();
    for (const finding of findings.filter((f) => keys.has(f.key))) {
      for (const attempt of finding.attempts) {
        if (attempt.kind === 'client' && attempt.keyFrom === 'child')
          linked.set(`${attempt.traceId}/${attempt.spanId}`, attempt.key);
      }
      expect(finding.callerWaitMillis).toBeCloseTo(timeoutMillis, 3);
    }
    // Only the keys that are findings: their evidence holds the sends.
    expect(linked.size).toBeGreaterThanOrEqual(40);
    for (const [id, key] of linked) expect(timedOut.get(id)).toBe(key);
  });
});
