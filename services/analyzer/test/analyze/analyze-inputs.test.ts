import { join } from 'node:path';
import { Readable } from 'node:stream';
import { defaultMapping } from '@keyscope/attempts';
import { defaultDetectorConfig } from '@keyscope/detector';
import { describe, expect, it } from 'vitest';
import { Analysis } from '../../src/analyze/analysis.ts';
import { analyzeInputs } from '../../src/analyze/analyze-inputs.ts';
import { decodeRecord, isFailure } from '../../src/analyze/decode-record.ts';
import type { ExtractResult, ExtractWorkers } from '../../src/analyze/extract-workers.ts';
import { listInputs } from '../../src/analyze/input-files.ts';
import { extractRecord } from '../../src/analyze/record-extract.ts';
import type { InputRecord } from '../../src/analyze/record-reader.ts';
import { protobufRequest, simulatedFailover, temporaryFolder, writeInput } from './simulated-archive.ts';

/**
 * Extraction threads as analyzeInputs sees them, on this thread: records are extracted when
 * submitted but handed back only when drained, and what was submitted before is counted.
 */
class HeldThreads implements Pick<ExtractWorkers, 'poll' | 'submit' | 'submitOutcome' | 'drain'> {
  readonly #held: (() => void)[] = [];
  /** Records submitted before each drain. */
  readonly submittedAtDrain: number[] = [];
  #submitted = 0;

  constructor(readonly analysis: Analysis) {}

  async poll(): Promise<boolean> {
    return true;
  }

  async submit(record: InputRecord, done: (result: ExtractResult) => void): Promise<void> {
    this.#submitted++;
    const decoded = decodeRecord(record, this.analysis.decodeOptions);
    const result: ExtractResult = isFailure(decoded)
      ? { failure: decoded }
      : { extract: extractRecord(decoded, this.analysis.extraction) };
    this.#held.push(() => done(result));
  }

  async submitOutcome(done: () => void): Promise<void> {
    this.#held.push(done);
  }

  async drain(): Promise<void> {
    this.submittedAtDrain.push(this.#submitted);
    for (const done of this.#held.splice(0)) done();
  }
}

const options = {
  keepGoing: false,
  maxRecordBytes: 64 * 2 ** 20,
  stdin: Readable.from([]),
  onBadRecord: () => {},
};

describe('analyzeInputs with extraction threads', () => {
  it('hands the threads the records of every file before waiting for the first one back', async () => {
    const { requests } = simulatedFailover();
    const dir = temporaryFolder();
    requests.forEach((request, i) => {
      writeInput(join(dir, `r-${String(i).padStart(2, '0')}.pb`), protobufRequest(request));
    });
    const { inputs } = await listInputs([dir]);
    const mapping = defaultMapping();
    const threaded = new Analysis(mapping, defaultDetectorConfig());
    const threads = new HeldThreads(threaded);
    const outcome = await analyzeInputs(inputs, threaded, { ...options, workers: threads });
    // Waiting after each file would leave the threads one record at a time to work on.
    expect(threads.submittedAtDrain).toEqual([requests.length]);
    expect(outcome).toEqual({
      summary: expect.objectContaining({
        files: requests.length,
        records: requests.length,
        analysedAny: true,
      }),
      stoppedAt: null,
    });

    const alone = new Analysis(mapping, defaultDetectorConfig());
    await analyzeInputs(inputs, alone, options);
    expect(threaded.finish().findings).toEqual(alone.finish().findings);
  });
});
