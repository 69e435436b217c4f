import { parentPort, workerData } from 'node:worker_threads';
import { AttemptBatchEncoder, mappingDecodeOptions } from '@keyscope/attempts';
import { decodeRecord, isFailure } from './decode-record.ts';
import {
  type ExtractReply,
  type ExtractTask,
  type ExtractThreadData,
  SLOT_BYTES,
} from './extract-workers.ts';
import { extractRecord } from './record-extract.ts';

/**
 * An extraction thread of `keyscope analyze` (extract-workers.ts): decodes each request it is
 * handed and extracts its attempts, as `Analysis.ingest` does on the main thread, and hands them
 * back as one batch of bytes (AttemptBatchEncoder; the main thread holds its decoder).
 */
const { inputs, slots } = workerData as ExtractThreadData;
const options = mappingDecodeOptions(inputs.mapping, 'all');
const encoder = new AttemptBatchEncoder();
const port = parentPort!;

port.on('message', (task: ExtractTask) => {
  try {
    const slot = 'slot' in task ? new Uint8Array(slots, task.slot * SLOT_BYTES, SLOT_BYTES) : undefined;
    const bytes =
      'slot' in task
        ? Buffer.from(slots, task.slot * SLOT_BYTES, task.length)
        : Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
    const decoded = decodeRecord({ ...task, bytes }, options);
    if (isFailure(decoded)) {
      port.postMessage({ sequence: task.sequence, failure: decoded } satisfies ExtractReply);
      return;
    }
    const { extracted, spans, firstUnixMillis, lastUnixMillis } = extractRecord(decoded, inputs);
    const counts = { sequence: task.sequence, spans, firstUnixMillis, lastUnixMillis };
    // The attempts go back in the record's slot when they fit (its bytes are decoded by now, and
    // the decoder keeps no view of them): a buffer per reply is memory the main thread's
    // collector would have to find and free.
    const batch = slot === undefined ? encoder.encode(extracted) : encoder.encode(extracted, slot);
    if (batch.buffer === slots) {
      port.postMessage({ ...counts, batchLength: batch.byteLength } satisfies ExtractReply);
    } else {
      port.postMessage({ ...counts, batch } satisfies ExtractReply, [batch.buffer as ArrayBuffer]);
    }
  } catch (error) {
    port.postMessage({
      sequence: task.sequence,
      crash: String((error as Error)?.stack ?? error),
    } satisfies ExtractReply);
  }
});
// Until a thread says so, the main thread analyses the records itself rather than wait.
port.postMessage({ ready: true } satisfies ExtractReply);
