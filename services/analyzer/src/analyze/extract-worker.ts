import { parentPort, workerData } from 'node:worker_threads';
import { mappingDecodeOptions } from '@keyscope/attempts';
import { type ExtractionInputs, extractRecord } from './analysis.ts';
import { decodeRecord, isFailure } from './decode-record.ts';
import type { ExtractReply, ExtractTask } from './extract-workers.ts';

/**
 * An extraction thread of `keyscope analyze` (extract-workers.ts): decodes each request it is
 * handed and extracts its attempts, as `Analysis.ingest` does on the main thread.
 */
const inputs = workerData as ExtractionInputs;
const options = mappingDecodeOptions(inputs.mapping, 'all');
const port = parentPort!;

port.on('message', (task: ExtractTask) => {
  let reply: ExtractReply;
  try {
    const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
    const decoded = decodeRecord({ ...task, bytes }, options);
    reply = isFailure(decoded)
      ? { sequence: task.sequence, failure: decoded }
      : { sequence: task.sequence, extract: extractRecord(decoded, inputs) };
  } catch (error) {
    reply = { sequence: task.sequence, crash: String((error as Error)?.stack ?? error) };
  }
  port.postMessage(reply);
});
