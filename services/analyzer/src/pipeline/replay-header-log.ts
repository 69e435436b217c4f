import {
  INFERRED_REPEATS,
  INFERRED_REPLAYS,
  OVERFLOW_TIER,
  replayHeaderOf,
  type ScopeReportState,
} from '@keyscope/detector';
import type { Logger } from '../logger.ts';

/**
 * Says in the log, once per tier and process, that a tier's replay header does not reach keyscope
 * (the detector's replay-header.ts): its repeats of a key on one node, read from HTTP responses,
 * reached `detector.replayHeaderMinRepeats` without a replay. The scope report and
 * `keyscope_replay_header_missing` say it for as long as it holds; the log line is for whoever
 * reads the log when it starts.
 */
export class ReplayHeaderLog {
  readonly #logged = new Set<string>();

  constructor(
    private readonly logger: Logger,
    private readonly minRepeats: number,
  ) {}

  /** Looks at the tiers a commit saved (`Detector.scopeChanges`). */
  note(saved: ScopeReportState): void {
    for (const state of saved) {
      if (state.tier === OVERFLOW_TIER || this.#logged.has(state.tier)) continue;
      const coverage = state.coverage ?? [];
      const header = replayHeaderOf(
        coverage[INFERRED_REPLAYS] ?? 0,
        coverage[INFERRED_REPEATS] ?? 0,
        this.minRepeats,
      );
      if (header?.verdict !== 'missing') continue;
      this.#logged.add(state.tier);
      this.logger.info(
        `scope report: ${state.service} ${state.operation}: replay header missing, ${header.repeats} repeats of a key on one node read from HTTP responses and none replayed. ${header.advice}`,
      );
    }
  }
}
