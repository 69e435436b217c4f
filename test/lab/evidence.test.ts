import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Span, SpanKind } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import { type LabTruth, readRecording } from './truth.ts';

/** The evidence real components leave, which a model of them might not: each in its recording. */
const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');

function recorded(scenario: string): { spans: Span[]; truth: LabTruth } {
  return {
    spans: readRecording(join(RECORDINGS, `${scenario}.jsonl.gz`)),
    truth: JSON.parse(readFileSync(join(RECORDINGS, `${scenario}.truth.json`), 'utf8')) as LabTruth,
  };
}

function keyOf(span: Span): unknown {
  return span.attributes['idempotency.key'];
}

describe('the recordings of real components', () => {
  it('show a killed node’s charged request as a 502 from nginx with no SERVER span under it', () => {
    const { spans, truth } = recorded('node-killed-behind-proxy');
    const parents = new Set(spans.map((span) => span.parentSpanId));
    const cutOff = spans.filter(
      (span) =>
        span.kind === SpanKind.CLIENT &&
        span.attributes['http.response.status_code'] === 502 &&
        !parents.has(span.spanId),
    );
    const hidden = new Set(truth.lostFirstExecutions.filter((lost) => lost.ranAgain).map((lost) => lost.key));
    expect(cutOff.filter((span) => hidden.has(keyOf(span) as string)).length).toBeGreaterThan(0);
  });

  it('end a SERVER span at the caller’s timeout with status 200 while the handler goes on and charges', () => {
    const { spans, truth } = recorded('brownout-round-robin');
    const duplicates = new Set(truth.duplicates.map((duplicate) => duplicate.key));
    const abandoned = spans.filter(
      (span) =>
        span.kind === SpanKind.SERVER &&
        span.attributes['idempotency.outcome'] === 'miss' &&
        span.attributes['http.response.status_code'] === 200 &&
        span.endTimeUnixMillis - span.startTimeUnixMillis < 3000 &&
        duplicates.has(keyOf(span) as string),
    );
    // The brownout adds 3 s before the charge: the client gave up at 2 s, before it.
    expect(abandoned.length).toBeGreaterThan(0);
  });

  it('show nginx re-sending one client send to a second node as two SERVER spans of one parent', () => {
    const { spans, truth } = recorded('proxy-retries-posts');
    const duplicates = new Set(truth.duplicates.map((duplicate) => duplicate.key));
    const serversOfSend = new Map<string, Set<string>>();
    for (const span of spans) {
      if (span.kind !== SpanKind.SERVER || span.attributes['idempotency.outcome'] !== 'miss') continue;
      const nodes = serversOfSend.get(span.parentSpanId) ?? new Set<string>();
      nodes.add(String(span.resource.attributes['service.instance.id']));
      serversOfSend.set(span.parentSpanId, nodes);
    }
    const resent = spans.filter(
      (span) =>
        span.kind === SpanKind.CLIENT &&
        duplicates.has(keyOf(span) as string) &&
        (serversOfSend.get(span.spanId)?.size ?? 0) >= 2,
    );
    expect(resent.length).toBeGreaterThan(0);
  });
});
