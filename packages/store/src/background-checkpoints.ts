import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL checkpoints on a second thread.
 *
 * In WAL mode a commit appends pages to the `-wal` file, and a checkpoint later copies them into
 * the database file and syncs it. SQLite runs that checkpoint inside whichever commit crosses
 * `wal_autocheckpoint`, so one commit in every few hundred stalls the event loop while ~40 MB
 * are written back and synced: about a tenth of the embedded service's time under load. Here a
 * worker thread holds its own connection to each registered database and runs a PASSIVE
 * checkpoint every `INTERVAL_MILLIS`: PASSIVE never waits for the writer (it copies what is
 * committed and leaves the rest), and the writer's next transaction restarts the WAL from its
 * start once everything in it is copied.
 *
 * One worker serves every store of the process (the Kafka detect role opens one per partition);
 * it starts with the first registered database, ends with the last, and never keeps the process
 * alive. Stores keep a much larger `wal_autocheckpoint` as a bound in case the worker falls behind.
 *
 * The worker is plain JavaScript evaluated from a string: it must run wherever the store runs,
 * including under loaders for TypeScript that a worker thread would not inherit.
 */
const INTERVAL_MILLIS = 1000;
/** How long `unregister` waits for the worker to close its connection (it may be mid-checkpoint). */
const CLOSE_WAIT_MILLIS = 5000;

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const connections = new Map();
const replies = new Int32Array(workerData.replies);
function checkpointAll() {
  for (const db of connections.values()) {
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // A failed checkpoint loses nothing: the pages stay in the WAL for the next one, and the
      // writer's own wal_autocheckpoint bounds how far behind this thread may fall.
    }
  }
}
setInterval(checkpointAll, workerData.intervalMillis);
parentPort.on('message', (message) => {
  if (message.type === 'add') {
    let ok = true;
    try {
      connections.set(message.id, new Database(message.path, { fileMustExist: true }));
    } catch {
      // The store goes on without background checkpoints; its own wal_autocheckpoint still runs.
      ok = false;
    }
    parentPort.postMessage({ type: 'added', id: message.id, ok });
  } else if (message.type === 'remove') {
    const db = connections.get(message.id);
    connections.delete(message.id);
    try {
      db?.close();
    } finally {
      Atomics.store(replies, message.slot, 1);
      Atomics.notify(replies, message.slot);
    }
  }
});
`;

const SLOTS = 64;

class CheckpointThread {
  readonly #worker: Worker;
  readonly #replies = new Int32Array(new SharedArrayBuffer(SLOTS * 4));
  #nextSlot = 0;
  /** The worker failed or exited: nobody is left to answer, and stores checkpoint on their own. */
  #gone = false;
  /** Registrations the worker has not answered yet, by id. */
  readonly #adding = new Map<number, (ok: boolean) => void>();

  constructor() {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { driver, intervalMillis: INTERVAL_MILLIS, replies: this.#replies.buffer },
    });
    this.#worker.on('message', (message: { type: string; id: number; ok: boolean }) => {
      if (message.type === 'added') this.#answered(message.id, message.ok);
    });
    this.#worker.on('error', () => this.#end());
    this.#worker.on('exit', () => this.#end());
    this.#worker.unref();
  }

  /** Registers the database; resolves once the worker answers: whether it holds a connection to it. */
  add(id: number, path: string): Promise<boolean> {
    if (this.#gone) return Promise.resolve(false);
    // Held while a registration waits, so that waiting for it keeps the process alive.
    if (this.#adding.size === 0) this.#worker.ref();
    const added = new Promise<boolean>((resolve) => this.#adding.set(id, resolve));
    this.#worker.postMessage({ type: 'add', id, path });
    return added;
  }

  #answered(id: number, ok: boolean): void {
    this.#adding.get(id)?.(ok);
    this.#adding.delete(id);
    if (this.#adding.size === 0) this.#worker.unref();
  }

  #end(): void {
    this.#gone = true;
    for (const id of [...this.#adding.keys()]) this.#answered(id, false);
  }

  /** Closes the worker's connection to `id`, waiting (bounded) until it is closed. */
  remove(id: number): void {
    if (this.#gone) return;
    const slot = this.#nextSlot;
    this.#nextSlot = (slot + 1) % SLOTS;
    Atomics.store(this.#replies, slot, 0);
    this.#worker.postMessage({ type: 'remove', id, slot });
    Atomics.wait(this.#replies, slot, 0, CLOSE_WAIT_MILLIS);
  }

  terminate(): void {
    void this.#worker.terminate();
  }
}

let thread: CheckpointThread | undefined;
let registered = 0;
let nextId = 1;

/** A database's registration with the checkpoint thread; `unregister` before closing the store. */
export interface BackgroundCheckpoints {
  /**
   * Resolves once the thread is up: true when it holds its connection to the database, false
   * when it could not open it or failed (the store's commits then checkpoint on their own).
   * Starting the thread takes tens of milliseconds of CPU: a service waits for it while starting
   * rather than pay for it during its first requests.
   */
  readonly started: Promise<boolean>;
  unregister(): void;
}

/** Starts checkpointing the WAL database at `path` on the shared worker thread. */
export function checkpointInBackground(path: string): BackgroundCheckpoints {
  thread ??= new CheckpointThread();
  const id = nextId++;
  registered++;
  const started = thread.add(id, path);
  let done = false;
  return {
    started,
    unregister() {
      if (done || thread === undefined) return;
      done = true;
      thread.remove(id);
      if (--registered === 0) {
        thread.terminate();
        thread = undefined;
      }
    },
  };
}
