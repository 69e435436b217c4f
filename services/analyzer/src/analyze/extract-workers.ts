import { setImmediate } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { AttemptBatchDecoder } from '@keyscope/attempts';
import type { RecordFailure } from './decode-record.ts';
import type { ExtractionInputs, RecordExtract } from './record-extract.ts';
import type { InputRecord } from './record-reader.ts';

/** A request handed to an extraction thread; its bytes are a copy the thread owns. */
export interface ExtractTask {
  readonly sequence: number;
  readonly encoding: InputRecord['encoding'];
  readonly bytes: Uint8Array;
  readonly unterminated: boolean;
}

export type ExtractReply =
  /** The record's extract but for its attempts, which are `batch` (see AttemptBatchEncoder). */
  | (Omit<RecordExtract, 'extracted'> & { readonly sequence: number; readonly batch: Uint8Array })
  | { readonly sequence: number; readonly failure: RecordFailure }
  /** A bug, not a bad record: the run stops with it. */
  | { readonly sequence: number; readonly crash: string }
  /** Sent once, when the thread has loaded and takes records. */
  | { readonly ready: true };

/** What a record became: its extract, or why it did not decode. */
export type ExtractResult = { readonly extract: RecordExtract } | { readonly failure: RecordFailure };

/** Requests handed out per thread before `submit` waits: bounds memory to a few records per thread. */
const IN_FLIGHT_PER_THREAD = 16;
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
  readonly #workers: Worker[];
  readonly #decoders: AttemptBatchDecoder[];
  #ready = false;
  readonly #waiting = new Map<number, (result: ExtractResult) => void>();
  readonly #arrived = new Map<number, ExtractResult>();
  #submitted = 0;
  #delivered = 0;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;
  #closing = false;

  constructor(threads: number, inputs: ExtractionInputs) {
    const tsx = import.meta.resolve('tsx/esm/api');
    const entry = new URL('./extract-worker.ts', import.meta.url).href;
    // The CLI is TypeScript run through tsx: each thread registers it before loading its entry.
    const bootstrap = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
    this.#decoders = Array.from({ length: threads }, () => new AttemptBatchDecoder());
    this.#workers = this.#decoders.map((decoder) => {
      const worker = new Worker(bootstrap, { eval: true, workerData: inputs });
      worker.on('message', (reply: ExtractReply) => this.#arrive(reply, decoder));
      worker.on('error', (error) => this.#fail(error));
      worker.on('exit', (code) => {
        if (code !== 0 && !this.#closing)
          this.#fail(new Error(`an extraction thread exited with code ${code}`));
      });
      return worker;
    });
  }

  get threads(): number {
    return this.#workers.length;
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
    const bytes = new Uint8Array(record.bytes);
    const task: ExtractTask = {
      sequence,
      encoding: record.encoding,
      bytes,
      unterminated: record.unterminated,
    };
    this.#workers[sequence % this.#workers.length]!.postMessage(task, [bytes.buffer]);
    while (this.#submitted - this.#delivered >= IN_FLIGHT_PER_THREAD * this.#workers.length)
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
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }

  #arrive(reply: ExtractReply, decoder: AttemptBatchDecoder): void {
    if ('ready' in reply) {
      this.#ready = true;
      return;
    }
    if ('crash' in reply) {
      this.#fail(new Error(`an extraction thread failed: ${reply.crash}`));
      return;
    }
    if ('failure' in reply) {
      this.#arrived.set(reply.sequence, { failure: reply.failure });
    } else {
      const { sequence, batch, ...counts } = reply;
      try {
        this.#arrived.set(sequence, { extract: { extracted: decoder.decode(batch), ...counts } });
      } catch (error) {
        this.#fail(error as Error);
        return;
      }
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
