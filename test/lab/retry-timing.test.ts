import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { analyzeRecording } from './analyze-recording.ts';

const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');

describe('retry timing over the brownout-round-robin recording', () => {
  // payments-b adds 3 s before the charge; callers give up at 2 s, and the HTTP instrumentation
  // ends each SERVER span there (status 200, no response sent) while the handler goes on to charge.
  it('says the first executions the callers left ran at least until they left, not that they ended within the wait', async () => {
    const report = (await analyzeRecording(join(RECORDINGS, 'brownout-round-robin.jsonl.gz'))) as unknown as {
      findings: { firstExecutionClipped: boolean; outlivedCallerWait: boolean | null }[];
      incidents: { advice: string }[];
    };
    const clipped = report.findings.filter((finding) => finding.firstExecutionClipped);
    expect(clipped.length).toBeGreaterThan(report.findings.length / 2);
    expect(clipped.every((finding) => finding.outlivedCallerWait === true)).toBe(true);
    const advice = report.incidents.map((incident) => incident.advice).join('\n');
    expect(advice).toMatch(/first executions were still running when their callers left/);
    expect(advice).not.toMatch(/\b0 of \d+ first executions outlived/);
  }, 60_000);
});
