import { join } from 'node:path';
import { Readable } from 'node:stream';
import { defaultMapping, extractAttempts, SendLinker } from '@keyscope/attempts';
import { createDetector, defaultDetectorConfig } from '@keyscope/detector';
import type { Span } from '@keyscope/otlp';
import { duplicateSome, scenarios, shuffle, simulate, splitIntoPayloads } from '@keyscope/simulator';
import { afterEach, describe, expect, it } from 'vitest';
import { Analysis } from '../../src/analyze/analysis.ts';
import { analyzeInputs } from '../../src/analyze/analyze-inputs.ts';
import { ExtractWorkers } from '../../src/analyze/extract-workers.ts';
import { listInputs } from '../../src/analyze/input-files.ts';
import { jsonLines, protobufRequest, temporaryFolder, writeInput } from './simulated-archive.ts';

/**
 * An archive with what makes detection order-sensitive: a node killed (routing events, incidents
 * regrouped under them), proxies retrying sends that timed out without their key (linked across
 * requests), spans delivered twice and one whole request delivered again, requests out of order
 * (findings retracted when later evidence disproves them), and a bad line among good ones.
 */
function orderSensitiveRequests(): Span[][] {
  const killed = simulate(scenarios.nodeKill(), { seed: 5 }).spans;
  // An hour later: the same services' traffic in the same minute would disprove the node's silence.
  const proxied = simulate(scenarios.proxyTimeoutRetry({ startUnixMillis: Date.UTC(2025, 5, 2, 10) }), {
    seed: 5,
  }).spans;
  const requests = [
    ...splitIntoPayloads(duplicateSome(killed, 0.1, 3), 20, 5),
    ...shuffle(splitIntoPayloads(duplicateSome(proxied, 0.1, 3), 20, 5), 9),
  ];
  requests.splice(10, 0, requests[4]!);
  return requests;
}

/** What the fixture is meant to exercise, counted by a detector fed the requests in order. */
function exercised(requests: readonly Span[][]) {
  const detector = createDetector(defaultDetectorConfig());
  const linker = new SendLinker();
  let retractedFindings = 0;
  let retractedIncidents = 0;
  for (const request of requests) {
    const extracted = extractAttempts(request, defaultMapping());
    linker.linkInto(extracted);
    const changes = detector.ingest(extracted);
    retractedFindings += changes.retractedFindingIds.length;
    retractedIncidents += changes.retractedIncidentIds.length;
  }
  const last = detector.flush();
  return {
    retractedFindings: retractedFindings + last.retractedFindingIds.length,
    retractedIncidents: retractedIncidents + last.retractedIncidentIds.length,
    routingEvents: detector.routingEvents().length,
    duplicateAttempts: detector.stats().duplicateAttempts,
    linkedSends: linker.counts().linked,
  };
}

let open: ExtractWorkers | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function analyzeFolder(dir: string, threads: number) {
  const { inputs } = await listInputs([dir]);
  const analysis = new Analysis(defaultMapping(), defaultDetectorConfig(), {
    nowUnixMillis: Date.UTC(2030, 0),
  });
  let workers: ExtractWorkers | undefined;
  if (threads > 1) {
    workers = open = new ExtractWorkers(threads - 1, analysis.extraction);
    // Every record through the threads: none analysed here while they load.
    while (!(await workers.poll())) {}
  }
  const bad: string[] = [];
  const outcome = await analyzeInputs(inputs, analysis, {
    workers,
    keepGoing: true,
    maxRecordBytes: 64 * 2 ** 20,
    stdin: Readable.from([]),
    onBadRecord: (record) => bad.push(`${record.path}:${record.line}:${record.code}`),
  });
  return { outcome, bad, result: analysis.finish() };
}

describe('extraction threads', () => {
  it('give what one thread gives: findings, incidents, routing events, scopes and counts', async () => {
    const requests = orderSensitiveRequests();
    expect(exercised(requests)).toEqual({
      retractedFindings: expect.toSatisfy((n: number) => n > 0),
      retractedIncidents: expect.toSatisfy((n: number) => n > 0),
      routingEvents: expect.toSatisfy((n: number) => n > 0),
      duplicateAttempts: expect.toSatisfy((n: number) => n > 0),
      linkedSends: expect.toSatisfy((n: number) => n > 0),
    });
    const dir = temporaryFolder();
    requests.slice(0, 30).forEach((request, i) => {
      writeInput(join(dir, `r-${String(i).padStart(2, '0')}.pb`), protobufRequest(request));
    });
    const lines = jsonLines(requests.slice(30)).split('\n');
    lines.splice(3, 0, '{"resourceSpans": 7}');
    writeInput(join(dir, 'r-30.jsonl'), lines.join('\n'));

    const one = await analyzeFolder(dir, 1);
    expect(one.bad).toHaveLength(1);
    expect(one.result.routingEvents.length).toBeGreaterThan(0);
    expect(one.result.counts.duplicateSpans).toBeGreaterThan(0);
    for (const threads of [2, 3]) {
      const threaded = await analyzeFolder(dir, threads);
      expect(threaded).toEqual(one);
      await open?.close();
      open = undefined;
    }
  });
});
