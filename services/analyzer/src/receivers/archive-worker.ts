import { parentPort, workerData } from 'node:worker_threads';
import { gzipSync } from 'node:zlib';
import {
  decodeLogRequest,
  decodeLogRequestJson,
  decodeTraceRequest,
  decodeTraceRequestJson,
  encodeTracesJson,
  spansOfLogRecords,
} from '@keyscope/otlp';
import { ArchiveFiles } from './archive-files.ts';
import type { ArchivedPayload, ArchiveReply, ArchiveTask, ArchiveThreadData } from './payload-archive.ts';

/**
 * serve's archive thread (payload-archive.ts): turns each batch of acknowledged payloads into OTLP/JSON
 * lines, gzips them as one member and appends it to the archive's files. The event loop only copies
 * a payload's bytes and posts them here.
 */
const { files: options, checkMillis } = workerData as ArchiveThreadData;
const port = parentPort!;
let files: ArchiveFiles;
try {
  files = new ArchiveFiles(options);
} catch (error) {
  port.postMessage({ startFailure: String((error as Error)?.message ?? error) } satisfies ArchiveReply);
  port.close();
  process.exit(0);
}
let archived = 0;
const timer = setInterval(() => {
  try {
    files.finishIfOlder();
  } catch (error) {
    port.postMessage({
      failure: { payloads: 0, unencodable: 0, message: (error as Error).message },
    } satisfies ArchiveReply);
  }
  port.postMessage({ counts: { ...files.counts(), payloads: archived } } satisfies ArchiveReply);
}, checkMillis);

port.on('message', (task: ArchiveTask) => {
  if (task.kind === 'stop') {
    clearInterval(timer);
    try {
      files.finish();
    } catch (error) {
      port.postMessage({
        failure: { payloads: 0, unencodable: 0, message: (error as Error).message },
      } satisfies ArchiveReply);
    }
    port.postMessage({
      stopped: true,
      counts: { ...files.counts(), payloads: archived },
    } satisfies ArchiveReply);
    port.close();
    return;
  }
  const { payloads, queuedBytes } = task;
  const lines: string[] = [];
  let unencodable = 0;
  let firstError = '';
  for (const payload of payloads) {
    try {
      // The receivers decoded each payload before acknowledging it: a failure here is a bug.
      lines.push(`${JSON.stringify(encodeTracesJson(spansOf(payload)))}\n`);
    } catch (error) {
      unencodable++;
      firstError ||= (error as Error).message;
    }
  }
  let unwritten = 0;
  try {
    if (lines.length > 0) files.append(gzipSync(Buffer.from(lines.join('')), { level: 1 }));
    archived += lines.length;
  } catch (error) {
    unwritten = lines.length;
    firstError ||= (error as Error).message;
  }
  port.postMessage({
    written: { queuedBytes, payloads: payloads.length },
    counts: { ...files.counts(), payloads: archived },
    ...(unwritten + unencodable > 0
      ? { failure: { payloads: unwritten, unencodable, message: firstError } }
      : {}),
  } satisfies ArchiveReply);
});
port.postMessage({ ready: true } satisfies ArchiveReply);

/** Every span of the request in full (a logs request's as the spans of its records), as analyze decodes them. */
function spansOf(payload: ArchivedPayload) {
  const bytes = Buffer.from(payload.bytes.buffer, payload.bytes.byteOffset, payload.bytes.byteLength);
  if (payload.signal === 'traces') {
    return (payload.encoding === 'json' ? decodeTraceRequestJson(bytes) : decodeTraceRequest(bytes)).spans;
  }
  const { records } = payload.encoding === 'json' ? decodeLogRequestJson(bytes) : decodeLogRequest(bytes);
  return spansOfLogRecords(records);
}
