import { Readable } from 'node:stream';
import { runAnalyze } from '@keyscope/analyzer';
import { createTextSink } from '@keyscope/testkit';

/** What the scoring reads of `keyscope analyze --format json`: the API's finding shape. */
export interface ReportFinding {
  readonly key: string;
  readonly class: string;
  readonly cause: string | null;
  readonly routing: { readonly event: { readonly type: string; readonly node: string } | null };
}

export interface AnalyzeReport {
  readonly findings: readonly ReportFinding[];
}

/** Runs `keyscope analyze --format json` on a recording, in this process, and parses its report. */
export async function analyzeRecording(path: string): Promise<AnalyzeReport> {
  const stdout = createTextSink();
  const stderr = createTextSink();
  const code = await runAnalyze(
    {
      paths: [path],
      format: 'json',
      mappingFile: undefined,
      keepGoing: false,
      maxRecordBytes: 64 * 1024 * 1024,
    },
    {
      stdout,
      stderr,
      stdin: Readable.from([]),
      env: {},
    },
  );
  if (code !== 0) throw new Error(`keyscope analyze exited with ${code}: ${stderr.text()}`);
  return JSON.parse(stdout.text()) as AnalyzeReport;
}
