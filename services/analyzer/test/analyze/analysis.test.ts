import { defaultMapping, mappingDecodeOptions } from '@keyscope/attempts';
import { defaultDetectorConfig } from '@keyscope/detector';
import { decodeTraces, encodeTraces, type Span, SpanKind } from '@keyscope/otlp';
import { duplicateSome, scenarios, simulate, splitIntoPayloads } from '@keyscope/simulator';
import { KeyscopeStore } from '@keyscope/store';
import { span } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { Analysis } from '../../src/analyze/analysis.ts';
import { defaultServeConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { DetectionPipeline } from '../../src/pipeline/detection-pipeline.ts';
import { protobufRequest, simulatedFailover } from './simulated-archive.ts';

describe('Analysis', () => {
  it('yields the same finding and incident ids as the embedded pipeline for the same requests', async () => {
    const { requests, truthKeys } = simulatedFailover();
    const mapping = defaultMapping();
    const detectorConfig = { ...defaultDetectorConfig(), keyNamespace: mapping.keyNamespace };

    const store = new KeyscopeStore({ path: ':memory:' });
    // serve's clock as the archive's traffic was sent: at its last span's end.
    const sentAt = Math.max(...requests.flat().map((s) => s.endTimeUnixMillis));
    const pipeline = new DetectionPipeline({
      mapping,
      spans: defaultServeConfig().spans,
      detectorConfig,
      store,
      logger: silentLogger,
      now: () => sentAt,
    });
    const analysis = new Analysis(mapping, detectorConfig);
    // The same attributes; analyze is also given the spans the pipeline never reads (see below).
    expect(analysis.decodeOptions).toBe(mappingDecodeOptions(mapping, 'all'));
    expect(pipeline.decodeOptions).toBe(mappingDecodeOptions(mapping));
    for (const request of requests) {
      // Each side decodes the same bytes with its own options, as serve's receiver and analyze do.
      const body = protobufRequest(request);
      await pipeline.consumeSpans(decodeTraces(body, pipeline.decodeOptions));
      analysis.ingest(decodeTraces(body, analysis.decodeOptions));
    }
    // serve ticks on the wall clock; offline, the last span's time is "now". Once the clock is the
    // allowed lateness past it, serve holds that activity final, as analyze does at the end of a file.
    const result = analysis.finish();
    pipeline.tick(pipeline.detector.stats().watermarkUnixMillis + detectorConfig.allowedLatenessMillis);

    const stored = store.findings.list({}, { limit: 1000 }).items;
    expect(result.findings.map((f) => f.id).sort()).toEqual(stored.map((f) => f.id).sort());
    expect(result.findings.map((f) => f.key).sort()).toEqual(truthKeys);
    const incidents = store.incidents.list({}, { limit: 1000 }).items;
    expect(result.incidents.map((i) => i.id).sort()).toEqual(incidents.map((i) => i.id).sort());
    // Evidence coverage counts a key once the spans' own times say it is final, not the clock:
    // serve's trails its traffic until later spans come, or its input ends as analyze's did.
    pipeline.detector.flush();
    expect(result.scopes).toEqual(pipeline.detector.scopeReport());
    store.close();
  });

  it('ignores redelivered spans, as serve does', () => {
    const { spans, truth } = simulatedFailover();
    const analysis = new Analysis(defaultMapping(), defaultDetectorConfig());
    analysis.ingest(duplicateSome(spans, 0.3, 7));
    const result = analysis.finish();
    expect(result.counts.duplicateSpans).toBeGreaterThan(0);
    const executions = (findings: { key: string; executions: number }[]) =>
      Object.fromEntries(findings.map((f) => [f.key, f.executions]));
    expect(executions(result.findings)).toEqual(
      executions(truth.keys.map((k) => ({ key: k.key, executions: k.executions.length }))),
    );
  });

  it('counts spans, attempts by kind and the traced time window', () => {
    const { spans } = simulatedFailover();
    const analysis = new Analysis(defaultMapping(), defaultDetectorConfig());
    analysis.ingest(spans);
    const { counts } = analysis.finish();
    expect(counts.spans).toBe(spans.length);
    expect(counts.attempts.server).toBeGreaterThan(0);
    expect(counts.attempts.client).toBeGreaterThan(0);
    expect(counts.firstSpanUnixMillis).toBe(Math.min(...spans.map((s) => s.startTimeUnixMillis)));
    expect(counts.lastSpanUnixMillis).toBe(Math.max(...spans.map((s) => s.endTimeUnixMillis)));
  });

  it('counts every decoded span into the window, also those no attempt is read from', () => {
    const analysis = new Analysis(defaultMapping(), defaultDetectorConfig());
    const early = span({
      id: 1,
      kind: SpanKind.CLIENT,
      attributes: {},
      startMillis: 1_767_225_000_000,
    });
    const late = span({
      id: 2,
      kind: SpanKind.INTERNAL,
      attributes: {},
      endMillis: 1_767_226_000_000,
    });
    const keyed = span({ id: 3, key: 'k1' });
    analysis.ingest(decodeTraces(encodeTraces([early, keyed, late]), analysis.decodeOptions));
    const { counts } = analysis.finish();
    expect(counts.spans).toBe(3);
    expect(counts.firstSpanUnixMillis).toBe(early.startTimeUnixMillis);
    expect(counts.lastSpanUnixMillis).toBe(late.endTimeUnixMillis);
  });

  it('analyses an old archive and refuses only spans no archive can hold', () => {
    const { spans, truthKeys } = simulatedFailover();
    // The machine clock a year and a half after the simulated traffic.
    const analysis = new Analysis(defaultMapping(), defaultDetectorConfig(), {
      nowUnixMillis: Date.UTC(2026, 11, 1),
    });
    const [first] = spans;
    const unset = { ...first!, spanId: 'f000000000000001', startTimeUnixMillis: 0 };
    const future = { ...first!, spanId: 'f000000000000002', endTimeUnixMillis: 18_446_744_073_709.551 };
    const oversized = {
      ...first!,
      spanId: 'f000000000000003',
      attributes: { ...first!.attributes, 'idempotency.key': 'k'.repeat(2_000) },
    };
    analysis.ingest([unset, ...spans, future, oversized]);
    const { findings, counts } = analysis.finish();
    expect([...new Set(findings.map((f) => f.key))].sort()).toEqual(truthKeys);
    expect(counts.refusedSpans).toEqual({
      KS_SPAN_TOO_OLD: 1,
      KS_SPAN_IN_FUTURE: 1,
      KS_SPAN_KEY_TOO_LONG: 1,
    });
    // The traced window is the archive's, not 1970 to the year 586 000.
    expect(counts.firstSpanUnixMillis).toBe(Math.min(...spans.map((s) => s.startTimeUnixMillis)));
    expect(counts.lastSpanUnixMillis).toBe(Math.max(...spans.map((s) => s.endTimeUnixMillis)));
  });

  it('forgets the keys of a day past the retry horizon as the archive reaches the next, and reports both days', () => {
    const day = 24 * 60 * 60 * 1000;
    const traffic = (seed: number, startUnixMillis: number) =>
      splitIntoPayloads(
        simulate(scenarios.nodeFailover({ requests: 300, nonMutationSpanFraction: 0.3, startUnixMillis }), {
          seed,
        }).spans,
        6,
        seed,
      );
    const first = traffic(2, scenarios.DEFAULT_START_UNIX_MILLIS);
    const second = traffic(3, scenarios.DEFAULT_START_UNIX_MILLIS + 1.25 * day);
    const alone = (requests: Span[][]) => {
      const analysis = new Analysis(defaultMapping(), defaultDetectorConfig());
      for (const request of requests) analysis.ingest(request);
      return {
        keys: analysis.detectorStats().keysInMemory,
        ids: analysis.finish().findings.map((f) => f.id),
      };
    };
    const firstAlone = alone(first);
    const secondAlone = alone(second);

    const analysis = new Analysis(defaultMapping(), defaultDetectorConfig());
    for (const request of first) analysis.ingest(request);
    expect(analysis.detectorStats().keysInMemory).toBe(firstAlone.keys);
    for (const request of second) analysis.ingest(request);
    // The first day's keys are gone once the second day's first request is in.
    expect(analysis.detectorStats().keysInMemory).toBe(secondAlone.keys);
    const ids = analysis.finish().findings.map((f) => f.id);
    expect(firstAlone.ids.length).toBeGreaterThan(0);
    expect(ids.sort()).toEqual([...firstAlone.ids, ...secondAlone.ids].sort());
  });

  it('keeps its attempts as compact records, about a fifth of the bytes of attempt objects', () => {
    const analysis = new Analysis(defaultMapping(), defaultDetectorConfig());
    const { spans } = simulate(scenarios.benchmark({ spans: 20_000 }), { seed: 4 });
    for (const request of splitIntoPayloads(spans, 50, 4)) analysis.ingest(request);
    const stats = analysis.attemptLogStats();
    expect(stats.attempts).toBeGreaterThan(2_000);
    expect(stats.attempts).toBe(analysis.detectorStats().attempts);
    // Attempt objects with their strings take ~460 bytes each; records ~60 to ~110.
    expect(stats.recordBytes / stats.attempts).toBeLessThan(150);
  });
});
