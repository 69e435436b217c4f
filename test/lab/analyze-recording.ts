import { Readable } from 'node:stream';
import { runAnalyze } from '@keyscope/analyzer';

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
  let stdout = '';
  let stderr = '';
  const output = (append: (text: string) => void) => ({
    isTTY: false,
    write(text: string, callback?: (error?: Error | null) => void) {
      append(text);
      callback?.();
      return true;
    },
  });
  const code = await runAnalyze(
    {
      paths: [path],
      format: 'json',
      mappingFile: undefined,
      keepGoing: false,
      maxRecordBytes: 64 * 1024 * 1024,
    },
    {
      stdout: output((text) => (stdout += text)),
      stderr: output((text) => (stderr += text)),
      stdin: Readable.from([]),
      env: {},
    },
  );
  if (code !== 0) throw new Error(`keyscope analyze exited with ${code}: ${stderr}`);
  return JSON.parse(stdout) as AnalyzeReport;
}
