import { readFileSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { type EmbeddedService, startEmbeddedService } from './in-process-service.ts';

/**
 * The embedded service (`keyscope serve`: receivers → detection pipeline → SQLite, API, alerts,
 * timers) in a process of its own, as it runs in production: a process that also decodes with
 * another configuration, or runs the in-memory paths it is compared with, runs JIT code
 * specialised for neither. Driven over IPC by ServiceProcess, one command at a time; the service
 * is started fresh per run, on the database file it is given.
 */
export type ServiceCommand =
  | { type: 'start'; dbPath: string; nowUnixMillis: number }
  | { type: 'measure' }
  | { type: 'sample' }
  | { type: 'purge'; attemptsBeforeUnixMillis: number; maxRows: number }
  | { type: 'stop' };

export type ServiceReply =
  | { type: 'started'; tracesUrl: string; execArgv: string[] }
  | { type: 'measuring' }
  | { type: 'stopped'; spans: number; cpuSeconds: number; checkpointCpuSeconds: number }
  | ({ type: 'sampled' } & ServiceSample)
  | ({ type: 'purged' } & RetentionPurge)
  | { type: 'failed'; message: string };

/** What a running service used since `measure`, and its memory now: `sample` leaves it running. */
export interface ServiceSample {
  /** Spans the receivers accepted since the service started. */
  spans: number;
  cpuSeconds: number;
  /** CPU time of checkpointing what the WAL held at the sample (see `checkpointWal`). */
  checkpointCpuSeconds: number;
  rssBytes: number;
  /** The process's largest resident set so far (VmHWM). */
  peakRssBytes: number;
  heapUsedBytes: number;
}

/** Retention run to the end on a running service's store, in the chunks its timer purges. */
export interface RetentionPurge {
  seconds: number;
  cpuSeconds: number;
  attemptsRemoved: number;
  /** `KeyscopeStore.purge` calls, each one transaction. */
  chunks: number;
}

let running: { embedded: EmbeddedService; dbPath: string; cpu: NodeJS.CpuUsage } | undefined;

async function handle(command: ServiceCommand): Promise<ServiceReply> {
  if (command.type === 'start') {
    if (running !== undefined) throw new Error('the service is already running');
    // Simulated traffic carries simulated times: the service's clock is the workload's.
    const embedded = await startEmbeddedService(command.dbPath, () => command.nowUnixMillis);
    running = { embedded, dbPath: command.dbPath, cpu: process.cpuUsage() };
    return { type: 'started', tracesUrl: embedded.tracesUrl, execArgv: process.execArgv };
  }
  if (running === undefined) throw new Error('the service is not running');
  if (command.type === 'measure') {
    running.cpu = process.cpuUsage();
    return { type: 'measuring' };
  }
  if (command.type === 'sample') {
    const used = process.cpuUsage(running.cpu);
    return {
      type: 'sampled',
      spans: running.embedded.spansAccepted(),
      cpuSeconds: cpuSeconds(used),
      checkpointCpuSeconds: checkpointWal(running.dbPath),
      rssBytes: process.memoryUsage.rss(),
      peakRssBytes: peakRssBytes(),
      heapUsedBytes: process.memoryUsage().heapUsed,
    };
  }
  if (command.type === 'purge') return { type: 'purged', ...purgeRetention(running.embedded, command) };
  const { embedded, dbPath, cpu } = running;
  running = undefined;
  // CPU time of every thread of this process since the start, or since `measure` (the checkpoint
  // thread included).
  const used = process.cpuUsage(cpu);
  const checkpointCpuSeconds = checkpointWal(dbPath);
  // Every span the receivers accepted (the pipeline is not given those it never reads).
  const spans = embedded.spansAccepted();
  await embedded.stop();
  return { type: 'stopped', spans, cpuSeconds: cpuSeconds(used), checkpointCpuSeconds };
}

/**
 * Purges attempts (and node activity) from before `attemptsBeforeUnixMillis` until none is left,
 * `maxRows` rows at a time as the service's retention timer does (findings, incidents and alerts
 * are left alone), back to back.
 */
function purgeRetention(
  embedded: EmbeddedService,
  command: { attemptsBeforeUnixMillis: number; maxRows: number },
): RetentionPurge {
  const { store } = embedded.service;
  const before = store.counts().attempts;
  const cpu = process.cpuUsage();
  const started = performance.now();
  let chunks = 0;
  for (;;) {
    chunks++;
    const removed = store.purge({
      attemptsBeforeUnixMillis: command.attemptsBeforeUnixMillis,
      recordsBeforeUnixMillis: Number.NEGATIVE_INFINITY,
      maxRows: command.maxRows,
    });
    if (removed === 0) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuUsed = cpuSeconds(process.cpuUsage(cpu));
  return { seconds, cpuSeconds: cpuUsed, attemptsRemoved: before - store.counts().attempts, chunks };
}

/** VmHWM of /proc/self/status in bytes; the current RSS where there is no /proc. */
function peakRssBytes(): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (match !== null) return Number(match[1]) * 1024;
  } catch {}
  return process.memoryUsage.rss();
}

/**
 * Copies into the database file what the run left in its WAL, and returns the CPU time that took
 * (every thread's). A running service's checkpoint thread copies it within a second (a PASSIVE
 * checkpoint every second): on one core, that is core time its ingest does not get, while a run
 * of the bench is over in less, before the thread has copied much or anything.
 */
function checkpointWal(dbPath: string): number {
  const start = process.cpuUsage();
  // A connection of its own, as the checkpoint thread's: a checkpoint copies the whole WAL,
  // whichever connection runs it.
  const db = new BetterSqlite3(dbPath);
  try {
    checkpointOn(db);
  } finally {
    db.close();
  }
  return cpuSeconds(process.cpuUsage(start));
}

function checkpointOn(db: BetterSqlite3.Database): void {
  for (let attempt = 0; attempt < CHECKPOINT_ATTEMPTS; attempt++) {
    // The thread may hold the checkpoint lock at this moment: then its copying is what counts.
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as {
      busy: number;
      log: number;
      checkpointed: number;
    }[];
    if (result!.busy === 0 && result!.checkpointed === result!.log) break;
    Atomics.wait(PAUSE, 0, 0, 5);
  }
}

const CHECKPOINT_ATTEMPTS = 400;
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

function cpuSeconds(used: NodeJS.CpuUsage): number {
  return (used.user + used.system) / 1e6;
}

process.on('message', (command: ServiceCommand) => {
  handle(command).then(
    (reply) => process.send!(reply),
    (error: unknown) => process.send!({ type: 'failed', message: String((error as Error)?.stack ?? error) }),
  );
});
process.on('disconnect', () => process.exit(0));
