import { Worker } from 'node:worker_threads';
import { KeyscopeError } from '@keyscope/errors';
import type { OtlpSignal } from '@keyscope/otlp';
import type { ServeConfig } from '../config.ts';
import { ANALYZER_ARCHIVE_UNWRITABLE } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { threadBootstrap } from '../thread-bootstrap.ts';
import type { ArchiveFileCounts, ArchiveFilesOptions } from './archive-files.ts';
import type { Payload, PayloadEncoding } from './payload.ts';

export type ArchiveConfig = ServeConfig['archive'];

/** Why an acknowledged payload is not in the archive, from a closed list. */
export const ARCHIVE_FAILURE_REASONS = [
  /** The file system refused the write (a full disk, a folder removed), or the archive thread failed. */
  'write_failed',
  /** More than `archive.maxQueuedBytes` were waiting for the archive thread. */
  'queue_full',
  /** The archive thread could not encode it as OTLP/JSON: a bug, its message logged. */
  'unencodable',
] as const;
export type ArchiveFailureReason = (typeof ARCHIVE_FAILURE_REASONS)[number];

export interface ArchiveCounts extends ArchiveFileCounts {
  /** Payloads written to the archive's files. */
  payloads: number;
  /** Payloads copied for the archive thread and not yet written, in bytes. */
  queuedBytes: number;
  /** Acknowledged payloads not archived, by reason. */
  failures: Record<ArchiveFailureReason, number>;
}

/** One acknowledged request, as the receivers decoded it; its bytes are the thread's own. */
export interface ArchivedPayload {
  readonly signal: OtlpSignal;
  readonly encoding: PayloadEncoding;
  readonly bytes: Uint8Array;
}

export type ArchiveTask =
  | { readonly kind: 'batch'; readonly payloads: ArchivedPayload[]; readonly queuedBytes: number }
  | { readonly kind: 'stop' };

type ThreadCounts = ArchiveFileCounts & { payloads: number };

export type ArchiveReply =
  | { readonly ready: true }
  | { readonly startFailure: string }
  | {
      /** A batch done with: its bytes leave the queue. */
      readonly written?: { readonly queuedBytes: number; readonly payloads: number };
      readonly counts?: ThreadCounts;
      /** Payloads lost to a write that failed, or that could not be encoded, and the first error's message. */
      readonly failure?: {
        readonly payloads: number;
        readonly unencodable: number;
        readonly message: string;
      };
    }
  | { readonly stopped: true; readonly counts: ThreadCounts };

export interface ArchiveThreadData {
  readonly files: ArchiveFilesOptions;
  /** How often the thread checks the open file's age and reports its counts. */
  readonly checkMillis: number;
}

/**
 * A batch is posted once it holds this many bytes, else at the end of the loop's turn: the thread
 * holds a batch's JSON (about twice its protobuf) and gzips it at once.
 */
const MAX_BATCH_BYTES = 4 * 1024 * 1024;
/** Longest between two checks of the open file's age. */
const MAX_CHECK_MILLIS = 1_000;

/**
 * Keeps the payloads the receivers acknowledge (`append`, after a 200 / OK, partial successes
 * included; never a refused one) in `archive.path`, in files `keyscope analyze` reads as they are:
 * gzipped OTLP/JSON lines, rotated by size and age, the oldest deleted past `archive.maxBytes`
 * (archive-files.ts). A logs payload is kept as the traces request of the spans its records become.
 *
 * On the event loop a payload costs one copy of its bytes; the copies go to a thread of the
 * archive's own in one message per turn of the loop, and the thread encodes, compresses and writes
 * them. A write that fails, a backlog past `archive.maxQueuedBytes` or a thread that dies loses
 * those payloads for the archive only: counted by reason, logged when it starts, never an error
 * for the sender.
 */
export class PayloadArchive {
  readonly #config: ArchiveConfig;
  readonly #logger: Logger;
  readonly #worker: Worker;
  #batch: ArchivedPayload[] = [];
  #batchBytes = 0;
  #scheduled = false;
  #queuedBytes = 0;
  #queuedPayloads = 0;
  #threadCounts: ThreadCounts = {
    payloads: 0,
    writtenBytes: 0,
    finishedFiles: 0,
    deletedFiles: 0,
    deletedBytes: 0,
    diskBytes: 0,
  };
  readonly #failures: Record<ArchiveFailureReason, number> = {
    write_failed: 0,
    queue_full: 0,
    unencodable: 0,
  };
  #writeFailing = false;
  #behind = false;
  #alive = true;
  #stopping: Promise<void> | undefined;
  readonly #exited: Promise<void>;

  /** Starts the archive thread; throws KS_ANALYZER_ARCHIVE_UNWRITABLE when `archive.path` cannot be written. */
  static async start(config: ArchiveConfig, logger: Logger): Promise<PayloadArchive> {
    const data: ArchiveThreadData = {
      files: {
        dir: config.path,
        maxBytes: config.maxBytes,
        fileBytes: config.fileBytes,
        fileMillis: config.fileMillis,
      },
      checkMillis: Math.min(config.fileMillis, MAX_CHECK_MILLIS),
    };
    const worker = new Worker(threadBootstrap(import.meta.url, 'archive-worker'), {
      eval: true,
      workerData: data,
    });
    let settle!: (first: ArchiveReply | Error) => void;
    const first = new Promise<ArchiveReply | Error>((resolve) => {
      settle = resolve;
    });
    const exited = (code: number) => settle(new Error(`the archive thread exited with code ${code}`));
    worker.on('message', settle).on('error', settle).on('exit', exited);
    const answer = await first;
    // Only these listeners: those the worker adds itself keep its messages flowing.
    worker.off('message', settle).off('error', settle).off('exit', exited);
    if (!('ready' in answer)) {
      const why = 'startFailure' in answer ? answer.startFailure : (answer as Error).message;
      await worker.terminate();
      throw new KeyscopeError(
        ANALYZER_ARCHIVE_UNWRITABLE,
        `archive.path must be a folder keyscope can create and write, received ${JSON.stringify(config.path)}: ${why}`,
      );
    }
    return new PayloadArchive(config, logger, worker);
  }

  private constructor(config: ArchiveConfig, logger: Logger, worker: Worker) {
    this.#config = config;
    this.#logger = logger;
    this.#worker = worker;
    worker.on('message', (reply: ArchiveReply) => this.#reply(reply));
    worker.on('error', (error) => this.#died(error.message));
    this.#exited = new Promise((resolve) => {
      worker.once('exit', (code) => {
        if (this.#stopping === undefined) this.#died(`it exited with code ${code}`);
        resolve();
      });
    });
  }

  /**
   * Queues an acknowledged payload for the archive. Copies its bytes at once: the receiver's
   * buffers are reused once it has answered.
   */
  append(payload: Payload): void {
    if (!this.#alive || this.#stopping !== undefined) {
      this.#failures.write_failed++;
      return;
    }
    const size = payload.bytes.byteLength;
    if (this.#queuedBytes + size > this.#config.maxQueuedBytes) {
      this.#failures.queue_full++;
      if (!this.#behind) {
        this.#behind = true;
        this.#logger.error(
          `archive: ${this.#config.path} is behind by archive.maxQueuedBytes (${this.#config.maxQueuedBytes} bytes): acknowledged payloads are not archived until it catches up (keyscope_archive_write_failures_total{reason="queue_full"})`,
        );
      }
      return;
    }
    this.#behind = false;
    // A buffer of its own (never a slice of a shared pool), so that it can be transferred.
    const bytes = payload.bytes.read((view) => new Uint8Array(view));
    this.#batch.push({ signal: payload.signal, encoding: payload.encoding, bytes });
    this.#batchBytes += size;
    this.#queuedBytes += size;
    this.#queuedPayloads++;
    if (this.#batchBytes >= MAX_BATCH_BYTES) this.#post();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#post());
    }
  }

  counts(): ArchiveCounts {
    return {
      ...this.#threadCounts,
      queuedBytes: this.#queuedBytes,
      failures: { ...this.#failures },
    };
  }

  /**
   * Writes what is queued, finishes the file being written and stops the thread; past
   * `timeoutMillis` the thread is stopped where it is, what it had not written counted as
   * `write_failed` (its open file keeps its `.partial` name until the next start). Idempotent.
   */
  stop(timeoutMillis: number): Promise<void> {
    this.#stopping ??= (async () => {
      this.#post();
      if (!this.#alive) return;
      this.#worker.postMessage({ kind: 'stop' } satisfies ArchiveTask);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        this.#exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMillis);
        }),
      ]);
      clearTimeout(timer);
      if (!timedOut) return;
      this.#logger.error(
        `archive: ${this.#queuedPayloads} payloads were not written to ${this.#config.path} within shutdown.drainTimeoutMillis (${timeoutMillis} ms) and are not archived (keyscope_archive_write_failures_total{reason="write_failed"})`,
      );
      this.#failures.write_failed += this.#queuedPayloads;
      this.#queuedPayloads = 0;
      this.#queuedBytes = 0;
      await this.#worker.terminate();
    })();
    return this.#stopping;
  }

  #post(): void {
    this.#scheduled = false;
    if (this.#batch.length === 0 || !this.#alive) return;
    const task: ArchiveTask = { kind: 'batch', payloads: this.#batch, queuedBytes: this.#batchBytes };
    this.#worker.postMessage(
      task,
      this.#batch.map((payload) => payload.bytes.buffer as ArrayBuffer),
    );
    this.#batch = [];
    this.#batchBytes = 0;
  }

  #reply(reply: ArchiveReply): void {
    if ('ready' in reply || 'startFailure' in reply) return;
    if ('stopped' in reply) {
      this.#threadCounts = reply.counts;
      return;
    }
    if (reply.counts !== undefined) {
      const archived = reply.counts.payloads - this.#threadCounts.payloads;
      this.#threadCounts = reply.counts;
      if (archived > 0 && this.#writeFailing && reply.failure === undefined) {
        this.#writeFailing = false;
        this.#logger.info(`archive: writing to ${this.#config.path} again`);
      }
    }
    if (reply.written !== undefined) {
      this.#queuedBytes -= reply.written.queuedBytes;
      this.#queuedPayloads -= reply.written.payloads;
    }
    const failure = reply.failure;
    if (failure !== undefined) {
      this.#failures.write_failed += failure.payloads;
      this.#failures.unencodable += failure.unencodable;
      if (failure.unencodable > 0) {
        this.#logger.error(`archive: a payload could not be encoded as OTLP/JSON: ${failure.message}`);
      }
      if (failure.payloads > 0 || failure.unencodable === 0) this.#writeFailed(failure.message);
    }
  }

  #writeFailed(message: string): void {
    if (this.#writeFailing) return;
    this.#writeFailing = true;
    this.#logger.error(
      `archive: cannot write to ${this.#config.path}: ${message}; acknowledged payloads are not archived until a write succeeds (keyscope_archive_write_failures_total{reason="write_failed"})`,
    );
  }

  #died(why: string): void {
    if (!this.#alive) return;
    this.#alive = false;
    // What was queued for it will not be written.
    this.#failures.write_failed += this.#queuedPayloads;
    this.#queuedPayloads = 0;
    this.#queuedBytes = 0;
    this.#batch = [];
    this.#batchBytes = 0;
    this.#logger.error(
      `archive: the archive thread failed (${why}); acknowledged payloads are not archived (keyscope_archive_write_failures_total{reason="write_failed"})`,
    );
  }
}
