import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SpanKind } from '@keyscope/otlp';
import { afterAll, describe, expect, it } from 'vitest';
import { analyzeRecording } from './analyze-recording.ts';
import { SCENARIOS } from './scenarios.ts';
import { type LabScore, scoreReport, scoreTable } from './score.ts';
import { type LabTruth, readRecording } from './truth.ts';

const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');
const scores: LabScore[] = [];

afterAll(() => {
  // The baseline the detector is measured against: attribution and suspected duplicates included.
  if (scores.length > 0) console.log(`lab baseline\n${scoreTable(scores)}`);
});

describe.each(SCENARIOS.map((scenario) => scenario.name))('the %s recording', (scenario) => {
  const recording = join(RECORDINGS, `${scenario}.jsonl.gz`);
  const truth = JSON.parse(readFileSync(join(RECORDINGS, `${scenario}.truth.json`), 'utf8')) as LabTruth;

  it('has a truth file that lists every key two SERVER spans of the recording executed', () => {
    const serverSpans = readRecording(recording).filter((span) => span.kind === SpanKind.SERVER);
    const recorded = new Set(serverSpans.map((span) => span.spanId));
    const misses = new Map<string, number>();
    for (const span of serverSpans) {
      const key = span.attributes['idempotency.key'];
      if (typeof key === 'string' && span.attributes['idempotency.outcome'] === 'miss') {
        misses.set(key, (misses.get(key) ?? 0) + 1);
      }
    }
    const twiceInSpans = [...misses].filter(([, count]) => count >= 2).map(([key]) => key);
    const duplicates = new Map(truth.duplicates.map((duplicate) => [duplicate.key, duplicate]));

    expect(twiceInSpans.filter((key) => !duplicates.has(key))).toEqual([]);
    for (const duplicate of truth.duplicates) {
      for (const execution of duplicate.executions)
        expect(execution.visible).toBe(recorded.has(execution.spanId));
    }
    // Every execution the ledger has is a miss in the spans unless its span was lost.
    const lost = new Set(truth.lostFirstExecutions.map((entry) => entry.key));
    for (const key of twiceInSpans) expect(lost.has(key)).toBe(false);
    expect(truth.charges).toBeGreaterThan(100);
  });

  it('is analysed by keyscope into every duplicate both of whose executions are in the spans, and no key that ran once', async () => {
    const score = scoreReport(truth, await analyzeRecording(recording));
    scores.push(score);
    expect(score.missedVisibleKeys).toEqual([]);
    expect(score.falseKeys).toEqual([]);
    expect(score.found).toBeGreaterThanOrEqual(score.visibleDuplicates);
  }, 120_000);
});
