import type { ChildProcess } from 'node:child_process';
import { SERVICE_NODE_FLAGS } from '@keyscope/analyzer';
import { forkTypeScript, nextMessage } from './fork-typescript.ts';
import type { RetentionPurge, ServiceCommand, ServiceReply, ServiceSample } from './service-process.ts';

/** What the service process answers to `stop` (service-process.ts). */
export type StoppedService = Omit<Extract<ServiceReply, { type: 'stopped' }>, 'type'>;

/** The parent's handle on the embedded service's process (service-process.ts). */
export class ServiceProcess {
  readonly #child: ChildProcess;

  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  /**
   * With the Node.js flags `keyscope serve` runs with (SERVICE_NODE_FLAGS, services/analyzer/src/node-flags.ts), and
   * `extraNodeFlags` after them (a profiler's, say).
   */
  static start(extraNodeFlags: readonly string[] = []): ServiceProcess {
    return new ServiceProcess(
      forkTypeScript(new URL('./service-process.ts', import.meta.url), {
        nodeFlags: [...SERVICE_NODE_FLAGS, ...extraNodeFlags],
      }),
    );
  }

  /** Starts the service on `dbPath` with its clock at `nowUnixMillis`; its OTLP/HTTP traces URL. */
  async startService(dbPath: string, nowUnixMillis: number): Promise<string> {
    return (await this.startServiceWithFlags(dbPath, nowUnixMillis)).tracesUrl;
  }

  /** As `startService`, also saying which Node.js flags the service's process runs with. */
  async startServiceWithFlags(
    dbPath: string,
    nowUnixMillis: number,
  ): Promise<{ tracesUrl: string; execArgv: string[] }> {
    const reply = await this.#send({ type: 'start', dbPath, nowUnixMillis });
    if (reply.type !== 'started') throw new Error(`service process: ${describe(reply)}`);
    return { tracesUrl: reply.tracesUrl, execArgv: reply.execArgv };
  }

  /**
   * Counts the service's CPU time from here on rather than from its start: called right before the
   * load begins, so that what the start left to do (collecting its garbage, compiling) is not
   * counted as the run's.
   */
  async startMeasuring(): Promise<void> {
    const reply = await this.#send({ type: 'measure' });
    if (reply.type !== 'measuring') throw new Error(`service process: ${describe(reply)}`);
  }

  /**
   * Stops the service (it closes its database); the spans it consumed, the CPU time it used since
   * its start or `startMeasuring`, and then the CPU time of checkpointing what its WAL still held
   * (service-process.ts), which a running service spends within a second.
   */
  async stopService(): Promise<StoppedService> {
    const reply = await this.#send({ type: 'stop' });
    if (reply.type !== 'stopped') throw new Error(`service process: ${describe(reply)}`);
    const { type: _, ...stopped } = reply;
    return stopped;
  }

  /**
   * Leaves the service running and says what it used since its start or `startMeasuring`, the
   * CPU time of checkpointing what its WAL holds now, and its memory.
   */
  async sample(): Promise<ServiceSample> {
    const reply = await this.#send({ type: 'sample' });
    if (reply.type !== 'sampled') throw new Error(`service process: ${describe(reply)}`);
    const { type: _, ...sample } = reply;
    return sample;
  }

  /** Runs the running service's retention to the end for attempts before `attemptsBeforeUnixMillis`. */
  async purge(attemptsBeforeUnixMillis: number, maxRows: number): Promise<RetentionPurge> {
    const reply = await this.#send({ type: 'purge', attemptsBeforeUnixMillis, maxRows });
    if (reply.type !== 'purged') throw new Error(`service process: ${describe(reply)}`);
    const { type: _, ...purged } = reply;
    return purged;
  }

  /** The service process's id, to pin it to a CPU (cpu-affinity.ts). */
  get pid(): number {
    return this.#child.pid!;
  }

  /** Ends the process; safe to call more than once. */
  stop(): void {
    if (this.#child.connected) this.#child.disconnect();
  }

  #send(command: ServiceCommand): Promise<ServiceReply> {
    const reply = nextMessage<ServiceReply>(this.#child);
    this.#child.send(command);
    return reply;
  }
}

function describe(reply: ServiceReply): string {
  return reply.type === 'failed' ? reply.message : `unexpected reply ${reply.type}`;
}
