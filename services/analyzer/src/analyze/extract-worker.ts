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
 * back as one transferred buffer (AttemptBatchEncoder; the main thread holds its decoder).
 */
const { inputs, slots } = workerData as ExtractThreadData;
const options = mappingDecodeOptions(inputs.mapping, 'all');
const encoder = new AttemptBatchEncoder();
const port = parentPort!;

port.on('message', (task: ExtractTask) => {
  let reply: ExtractReply;
  try {
    // A slot is read before the reply, which hands it back: the decoder keeps no view of it.
    const bytes =
      'slot' in task
        ? Buffer.from(slots, task.slot * SLOT_BYTES, task.length)
        : Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
    const decoded = decodeRecord({ ...task, bytes }, options);
    if (isFailure(decoded)) {
      reply = { sequence: task.sequence, failure: decoded };
    } else {
      const { extracted, spans, firstUnixMillis, lastUnixMillis } = extractRecord(decoded, inputs);
      const batch = encoder.encode(extracted);
      reply = { sequence: task.sequence, batch, spans, firstUnixMillis, lastUnixMillis };
      port.postMessage(reply, [batch.buffer]);
      return;
    }
  } catch (error) {
    reply = { sequence: task.sequence, crash: String((error as Error)?.stack ?? error) };
  }
  port.postMessage(reply);
});
// Until a thread says so, the main thread analyses the records itself rather than wait.
port.postMessage({ ready: true } satisfies ExtractReply);
