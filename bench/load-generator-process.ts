import type { ChildProcess } from 'node:child_process';
import { forkTypeScript, nextMessage } from './fork-typescript.ts';
import type { LoadGeneratorCommand, LoadGeneratorReply, LoadResult, Pacing } from './load-generator.ts';

/** The parent's handle on the load generator's process (load-generator.ts). */
export class LoadGeneratorProcess {
  readonly #child: ChildProcess;
  #busy: Promise<unknown> = Promise.resolve();

  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  static start(): LoadGeneratorProcess {
    return new LoadGeneratorProcess(forkTypeScript(new URL('./load-generator.ts', import.meta.url)));
  }

  /** Makes the payloads of `file` (see payload-file.ts) the ones `run` sends. */
  async load(file: string): Promise<number> {
    const reply = await this.#send({ type: 'load', file });
    if (reply.type !== 'loaded') throw new Error(`load generator: ${describe(reply)}`);
    return reply.payloads;
  }

  async run(url: string, requests: number, connections: number, pacing?: Pacing): Promise<LoadResult> {
    const reply = await this.#send({
      type: 'run',
      url,
      requests,
      connections,
      ...(pacing === undefined ? {} : { pacing }),
    });
    if (reply.type !== 'ran') throw new Error(`load generator: ${describe(reply)}`);
    return reply.result;
  }

  /** The load generator's process id, to pin it to a CPU (cpu-affinity.ts). */
  get pid(): number {
    return this.#child.pid!;
  }

  /** Ends the process; safe to call more than once. */
  stop(): void {
    if (this.#child.connected) this.#child.disconnect();
  }

  #send(command: LoadGeneratorCommand): Promise<LoadGeneratorReply> {
    // One command at a time: replies carry no id, so they must come back in order.
    const reply = this.#busy.then(() => {
      const answer = nextMessage<LoadGeneratorReply>(this.#child);
      this.#child.send(command);
      return answer;
    });
    this.#busy = reply.catch(() => undefined);
    return reply;
  }
}

function describe(reply: LoadGeneratorReply): string {
  return reply.type === 'failed' ? reply.message : `unexpected reply ${reply.type}`;
}
