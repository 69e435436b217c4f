import { setImmediate } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { AttemptBatchDecoder } from '@keyscope/attempts';
import { threadBootstrap } from '../thread-bootstrap.ts';
import type { RecordFailure } from './decode-record.ts';
import type { ExtractionInputs, RecordExtract } from './record-extract.ts';
import type { InputRecord } from './record-reader.ts';

/**
 * A request handed to an extraction thread: its bytes are in one of the thread's slots (`slot`,
 * `length`), which is the thread's to read, and then to write the reply's attempts in, until this
 * thread has decoded the reply; or, for a record larger than a slot, `bytes`, a copy the thread owns.
 */
export type ExtractTask = {
  readonly sequence: number;
  readonly encoding: InputRecord['encoding'];
  readonly unterminated: boolean;
} & ({ readonly slot: number; readonly length: number } | { readonly bytes: Uint8Array });

/** What an extraction thread is started with. */
export interface ExtractThreadData {
  readonly inputs: ExtractionInputs;
  /** IN_FLIGHT_PER_THREAD slots of SLOT_BYTES each. */
  readonly slots: SharedArrayBuffer;
}

export type ExtractReply =
  /**
   * The record's extract but for its attempts (see AttemptBatchEncoder): `batchLength` bytes at the
   * start of the record's slot, or `batch`, transferred, when they did not fit or it had none.
   */
  | (Omit<RecordExtract, 'extracted'> & { readonly sequence: number } & (
        | { readonly batchLength: number }
        | { readonly batch: Uint8Array }
      ))
  | { readonly sequence: number; readonly failure: RecordFailure }
  /** A bug, not a bad record: the run stops with it. */
  | { readonly sequence: number; readonly crash: string }
  /** Sent once, when the thread has loaded and takes records. */
  | { readonly ready: true };

interface Thread {
  readonly worker: Worker;
  /** Its attempt batches, in the order it encoded them. */
  readonly decoder: AttemptBatchDecoder;
  readonly slots: Buffer;
  /** Slots no record in flight holds. */
  readonly free: number[];
  readonly slotOf: Map<number, number>;
}

/** What a record became: its extract, or why it did not decode. */
export type ExtractResult = { readonly extract: RecordExtract } | { readonly failure: RecordFailure };

/** Requests handed out per thread before `submit` waits: bounds memory to a few records per thread. */
const IN_FLIGHT_PER_THREAD = 16;
/**
 * A record is copied into a slot of memory shared with its thread, one per record in flight,
 * rather than into a buffer of its own to transfer: the slots' pages are touched once and reused,
 * where every new buffer's pages fault in on first write, and posting a message that transfers
 * nothing costs less. Most requests are well under a MiB (an SDK's 512 spans: ~250 KiB).
 */
export const SLOT_BYTES = 1024 * 1024;
/** The result of `submitOutcome`, which no thread makes. */
const NOTHING: ExtractResult = Object.freeze({ failure: { code: '', message: '' } });

/**
 * Threads that decode requests and extract their attempts for `keyscope analyze`, while the main
 * thread reads the files and runs the one detector. Results come back in any order and are handed
 * to `done` in the order the records were submitted, so the detector sees exactly the sequence one
 * thread would: the same findings, incidents and ids. Each thread's attempts arrive as one buffer
 * per record, decoded here in the order that thread encoded them.
 */
export class ExtractWorkers {
  readonly #threads: Thread[];
  #ready = false;
  readonly #waiting = new Map<number, (result: ExtractResult) => void>();
  readonly #arrived = new Map<number, ExtractResult>();
  #submitted = 0;
  #delivered = 0;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;
  #closing = false;

  constructor(threads: number, inputs: ExtractionInputs) {
    const bootstrap = threadBootstrap(import.meta.url, 'extract-worker');
    this.#threads = Array.from({ length: threads }, () => {
      const slots = new SharedArrayBuffer(IN_FLIGHT_PER_THREAD * SLOT_BYTES);
      const workerData: ExtractThreadData = { inputs, slots };
      const worker = new Worker(bootstrap, { eval: true, workerData });
      const thread: Thread = {
        worker,
        decoder: new AttemptBatchDecoder(),
        slots: Buffer.from(slots),
        free: Array.from({ length: IN_FLIGHT_PER_THREAD }, (_, i) => i),
        slotOf: new Map(),
      };
      worker.on('message', (reply: ExtractReply) => this.#arrive(reply, thread));
      worker.on('error', (error) => this.#fail(error));
      worker.on('exit', (code) => {
        if (code !== 0 && !this.#closing)
          this.#fail(new Error(`an extraction thread exited with code ${code}`));
      });
      return thread;
    });
  }

  get threads(): number {
    return this.#threads.length;
  }

  /**
   * Lets the threads' messages in (a turn of the event loop) and says whether a thread has loaded
   * and takes records. Until then a caller does better to analyse records itself than to let them
   * wait; once it submitted one, it submits the rest, for them to stay in order.
   */
  async poll(): Promise<boolean> {
    if (!this.#ready) await setImmediate();
    this.#check();
    return this.#ready;
  }

  /**
   * Hands `record` to the next thread; resolves once another may be submitted. `done` is called
   * with its result after those of every record submitted before it.
   */
  async submit(record: InputRecord, done: (result: ExtractResult) => void): Promise<void> {
    this.#check();
    const sequence = this.#submitted++;
    this.#waiting.set(sequence, done);
    const thread = this.#threads[sequence % this.#threads.length]!;
    const { encoding, unterminated } = record;
    const slot = record.bytes.length <= SLOT_BYTES ? thread.free.pop() : undefined;
    if (slot === undefined) {
      const bytes = new Uint8Array(record.bytes);
      thread.worker.postMessage({ sequence, encoding, unterminated, bytes } satisfies ExtractTask, [
        bytes.buffer,
      ]);
    } else {
      record.bytes.copy(thread.slots, slot * SLOT_BYTES);
      thread.slotOf.set(sequence, slot);
      const task: ExtractTask = { sequence, encoding, unterminated, slot, length: record.bytes.length };
      thread.worker.postMessage(task);
    }
    while (this.#submitted - this.#delivered >= IN_FLIGHT_PER_THREAD * this.#threads.length)
      await this.#sleep();
  }

  /** Calls `done` in its turn among the records submitted, without handing anything to a thread. */
  async submitOutcome(done: () => void): Promise<void> {
    this.#check();
    const sequence = this.#submitted++;
    this.#waiting.set(sequence, done);
    this.#arrived.set(sequence, NOTHING);
    this.#deliver();
  }

  /** Resolves once every submitted record's `done` was called. */
  async drain(): Promise<void> {
    while (this.#delivered < this.#submitted) await this.#sleep();
    this.#check();
  }

  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(this.#threads.map((thread) => thread.worker.terminate()));
  }

  #arrive(reply: ExtractReply, thread: Thread): void {
    if ('ready' in reply) {
      this.#ready = true;
      return;
    }
    if ('crash' in reply) {
      this.#fail(new Error(`an extraction thread failed: ${reply.crash}`));
      return;
    }
    const slot = thread.slotOf.get(reply.sequence);
    if ('failure' in reply) {
      this.#arrived.set(reply.sequence, { failure: reply.failure });
    } else {
      const { sequence, spans, firstUnixMillis, lastUnixMillis } = reply;
      const batch =
        'batch' in reply
          ? reply.batch
          : thread.slots.subarray(slot! * SLOT_BYTES, slot! * SLOT_BYTES + reply.batchLength);
      try {
        const extracted = thread.decoder.decode(batch);
        this.#arrived.set(sequence, { extract: { extracted, spans, firstUnixMillis, lastUnixMillis } });
      } catch (error) {
        this.#fail(error as Error);
        return;
      }
    }
    // Decoded: the slot is free for the next record.
    if (slot !== undefined) {
      thread.slotOf.delete(reply.sequence);
      thread.free.push(slot);
    }
    this.#deliver();
  }

  /** Hands every result whose turn has come to its `done`. */
  #deliver(): void {
    for (
      let next = this.#arrived.get(this.#delivered);
      next !== undefined;
      next = this.#arrived.get(this.#delivered)
    ) {
      const sequence = this.#delivered;
      const done = this.#waiting.get(sequence)!;
      this.#arrived.delete(sequence);
      this.#waiting.delete(sequence);
      this.#delivered++;
      try {
        done(next);
      } catch (error) {
        this.#fail(error as Error);
        return;
      }
    }
    this.#wakeUp();
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    this.#wakeUp();
  }

  #check(): void {
    if (this.#failure !== undefined) throw this.#failure;
  }

  #sleep(): Promise<void> {
    this.#check();
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
    }).then(() => this.#check());
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
