import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { readPayloadFile } from './payload-file.ts';

/**
 * The load generator: a child process (so that the receiver under test has its process, and a
 * core, to itself) that posts pre-encoded OTLP protobuf payloads over keep-alive connections.
 * Driven over IPC by LoadGeneratorProcess, one command at a time.
 */

export type LoadGeneratorCommand =
  | { type: 'load'; file: string }
  | { type: 'run'; url: string; requests: number; connections: number; pacing?: Pacing };

/**
 * Sending at a fixed rate instead of as fast as answers come: request i is due
 * `i × intervalMillis` after the first, whatever the answers before it (an open loop, as
 * independent clients send), with at most `connections` in flight. Its latency is counted from
 * when it was due, so a request held back by a full set of connections counts that wait too.
 */
export interface Pacing {
  intervalMillis: number;
}

export type LoadGeneratorReply =
  | { type: 'loaded'; payloads: number }
  | { type: 'ran'; result: LoadResult }
  | { type: 'failed'; message: string };

export interface LoadResult {
  requests: number;
  /** Answered 200. */
  ok: number;
  /** Other answers, by status code; connection errors under 'error'. */
  refused: Record<string, number>;
  /** From the first request sent to the last answer received. */
  elapsedMillis: number;
  /** CPU time this process spent meanwhile: near elapsed time, it may be what limits the rate. */
  cpuMillis: number;
  /** Per request, in the order sent: milliseconds from sending it to its answer. */
  latenciesMillis: number[];
}

let bodies: Buffer[] = [];

/**
 * Sends `requests` posts, payloads in file order (cycling), `connections` at a time: unpaced, each
 * connection sends its next payload as soon as the previous one is answered; paced, see Pacing.
 */
async function run(url: string, requests: number, connections: number, pacing?: Pacing): Promise<LoadResult> {
  if (bodies.length === 0) throw new Error('no payloads loaded');
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const refused: Record<string, number> = {};
  let next = 0;
  let ok = 0;
  const latenciesMillis: number[] = new Array(requests).fill(0);
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  const sinceStartMillis = () => Number(process.hrtime.bigint() - started) / 1e6;
  const connection = async () => {
    while (next < requests) {
      const request = next++;
      const body = bodies[request % bodies.length]!;
      let dueMillis = sinceStartMillis();
      if (pacing !== undefined) {
        dueMillis = request * pacing.intervalMillis;
        const early = dueMillis - sinceStartMillis();
        if (early > 0) await sleep(early);
      }
      const status = await post(agent, url, body).catch(() => 'error');
      latenciesMillis[request] = sinceStartMillis() - dueMillis;
      if (status === 200) ok++;
      else refused[status] = (refused[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: connections }, connection));
  const elapsedMillis = sinceStartMillis();
  const used = process.cpuUsage(cpu);
  agent.destroy();
  return {
    requests,
    ok,
    refused,
    elapsedMillis,
    cpuMillis: (used.user + used.system) / 1000,
    latenciesMillis,
  };
}

function post(agent: Agent, url: string, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/x-protobuf', 'content-length': body.byteLength },
      },
      (res) => {
        res.on('error', reject);
        res.on('end', () => resolve(res.statusCode ?? 0));
        // The answer (an ExportTraceServiceResponse) is not needed, only its status.
        res.resume();
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function handle(command: LoadGeneratorCommand): Promise<LoadGeneratorReply> {
  try {
    if (command.type === 'load') {
      bodies = readPayloadFile(command.file);
      return { type: 'loaded', payloads: bodies.length };
    }
    return {
      type: 'ran',
      result: await run(command.url, command.requests, command.connections, command.pacing),
    };
  } catch (error) {
    return { type: 'failed', message: (error as Error).message };
  }
}

process.on('message', (command: LoadGeneratorCommand) => {
  void handle(command).then((reply) => process.send?.(reply));
});
// The parent disconnects when it is done; nothing else keeps this process alive.
process.on('disconnect', () => process.exit(0));
