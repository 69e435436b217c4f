import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type AnalyzeReport, analyzeRecording } from './analyze-recording.ts';
import { SCENARIOS } from './scenarios.ts';
import type { FailureWindow, LabTruth, TruthExecution } from './truth.ts';

/** Finding classes that say a key executed twice, both executions in the spans. */
export const DUPLICATE_CLASSES: ReadonlySet<string> = new Set([
  'cross_store_duplicate',
  'same_store_duplicate',
]);

/** The routing event keyscope should name for each kind of failure the lab injects. */
export const EXPECTED_EVENT_TYPES: Readonly<Record<FailureWindow['type'], readonly string[]>> = {
  kill: ['node_down'],
  // The partitioned node serves nobody: it falls silent, as a dead one does.
  partition: ['node_down'],
  brownout: ['latency_spike'],
};

/** keyscope's report against a recording's truth. Ratios are null when their denominator is 0. */
export interface LabScore {
  readonly scenario: string;
  /** Keys the ledger charged twice or more. */
  readonly duplicates: number;
  /** Of those, the ones with at least two executions in the spans: two decision spans in the recording. */
  readonly visibleDuplicates: number;
  /** Truth duplicates with a duplicate finding. */
  readonly found: number;
  /** Visible duplicates without a duplicate finding. */
  readonly missedVisibleKeys: readonly string[];
  /** Duplicate findings for keys the ledger charged once or never. */
  readonly falseKeys: readonly string[];
  /** Found duplicates whose truth names a failure window. */
  readonly foundInWindow: number;
  /** Of those, the ones whose finding names the window's routing event (type and node). */
  readonly attributed: number;
  readonly attributionRatio: number | null;
  /** Keys whose first execution's SERVER span never reached the recording. */
  readonly lostFirstExecutions: number;
  /**
   * Of those, the keys that executed again and whose first decision span is lost too: duplicates
   * the spans show once at most. (A child check that reached the recording shows the execution.)
   */
  readonly hiddenDuplicates: number;
  /** Hidden duplicates with a `suspected_duplicate` finding. */
  readonly flagged: number;
  readonly flaggedRatio: number | null;
  readonly suspectedFindings: number;
  /** Suspected findings whose key the ledger charged twice or more. */
  readonly suspectedPrecision: number | null;
}

export function scoreReport(truth: LabTruth, report: AnalyzeReport): LabScore {
  const duplicateKeys = new Set(truth.duplicates.map((duplicate) => duplicate.key));
  const windows = new Map(truth.windows.map((window) => [window.id, window]));
  const found = new Map(
    report.findings
      .filter((finding) => DUPLICATE_CLASSES.has(finding.class))
      .map((finding) => [finding.key, finding]),
  );
  const suspected = report.findings.filter((finding) => finding.class === 'suspected_duplicate');
  const suspectedKeys = new Set(suspected.map((finding) => finding.key));

  const visible = truth.duplicates.filter((d) => d.executions.filter(decisionVisible).length >= 2);
  const foundDuplicates = truth.duplicates.filter((d) => found.has(d.key));
  const inWindow = foundDuplicates.filter((d) => d.windowId !== null);
  const attributed = inWindow.filter((d) => {
    const window = windows.get(d.windowId!)!;
    const event = found.get(d.key)!.routing.event;
    return (
      event !== null && event.node === window.node && EXPECTED_EVENT_TYPES[window.type].includes(event.type)
    );
  });
  const hidden = truth.lostFirstExecutions.filter((lost) => lost.ranAgain && lost.decisionVisible !== true);
  const flagged = hidden.filter((lost) => suspectedKeys.has(lost.key));
  return {
    scenario: truth.scenario,
    duplicates: truth.duplicates.length,
    visibleDuplicates: visible.length,
    found: foundDuplicates.length,
    missedVisibleKeys: visible.filter((d) => !found.has(d.key)).map((d) => d.key),
    falseKeys: [...found.keys()].filter((key) => !duplicateKeys.has(key)).sort(),
    foundInWindow: inWindow.length,
    attributed: attributed.length,
    attributionRatio: ratio(attributed.length, inWindow.length),
    lostFirstExecutions: truth.lostFirstExecutions.length,
    hiddenDuplicates: hidden.length,
    flagged: flagged.length,
    flaggedRatio: ratio(flagged.length, hidden.length),
    suspectedFindings: suspected.length,
    suspectedPrecision: ratio(
      suspected.filter((finding) => duplicateKeys.has(finding.key)).length,
      suspected.length,
    ),
  };
}

/** Whether keyscope can count the execution: its decision span is in the recording (older truth files: its SERVER span). */
function decisionVisible(execution: TruthExecution): boolean {
  return execution.decisionVisible ?? execution.visible;
}

function ratio(part: number, whole: number): number | null {
  return whole === 0 ? null : part / whole;
}

const RECORDINGS = join(dirname(fileURLToPath(import.meta.url)), 'recordings');

/** Analyzes a committed recording and scores the report against its truth file. */
export async function scoreRecording(scenario: string): Promise<LabScore> {
  const truth = JSON.parse(readFileSync(join(RECORDINGS, `${scenario}.truth.json`), 'utf8')) as LabTruth;
  return scoreReport(truth, await analyzeRecording(join(RECORDINGS, `${scenario}.jsonl.gz`)));
}

/** One line per scenario: the baseline the detector is measured against. */
export function scoreTable(scores: readonly LabScore[]): string {
  const percent = (value: number | null) => (value === null ? '–' : `${Math.round(value * 100)}%`);
  const header = [
    'scenario',
    'dups',
    'visible',
    'found',
    'missed',
    'false',
    'in window',
    'attributed',
    'lost first',
    'hidden dups',
    'flagged',
    'suspected',
    'precision',
  ];
  const rows = scores.map((s) => [
    s.scenario,
    s.duplicates,
    s.visibleDuplicates,
    s.found,
    s.missedVisibleKeys.length,
    s.falseKeys.length,
    s.foundInWindow,
    `${s.attributed} (${percent(s.attributionRatio)})`,
    s.lostFirstExecutions,
    s.hiddenDuplicates,
    `${s.flagged} (${percent(s.flaggedRatio)})`,
    s.suspectedFindings,
    percent(s.suspectedPrecision),
  ]);
  return [header, ...rows].map((row) => `| ${row.join(' | ')} |`).join('\n');
}

// `node --import tsx test/lab/score.ts [scenario…]`: the table for the committed recordings.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const names = process.argv.slice(2);
  const scores: LabScore[] = [];
  for (const scenario of names.length === 0 ? SCENARIOS.map((s) => s.name) : names) {
    scores.push(await scoreRecording(scenario));
  }
  console.log(scoreTable(scores));
}
