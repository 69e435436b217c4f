import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
  /**
   * What the receiver answered: a status, 'reset' when it dropped the connection, 'none' while a
   * delayed answer is pending (and for good if the client hung up first).
   */
  answer: number | 'reset' | 'none';
  /** When the request's body had arrived (Date.now). */
  arrivedUnixMillis: number;
  /** When the exchange ended, answered or cut by either side (Date.now); undefined while open. */
  closedUnixMillis?: number;
}

/**
 * How the receiver answers its n-th request (from 0): a status with headers, `afterMillis` after
 * the request arrived (at once by default), or a dropped connection.
 */
export type Answer =
  | { status: number; headers?: Record<string, string>; body?: string; afterMillis?: number }
  | 'reset';

export interface HttpReceiver {
  url: string;
  /** Every request, in arrival order, including the ones it failed. */
  requests: ReceivedRequest[];
  /** The requests it answered with a 2xx. */
  accepted(): ReceivedRequest[];
  close(): Promise<void>;
}

/** A local sink on 127.0.0.1:0 that answers by plan (default: 200 to everything). */
export async function startReceiver(
  plan: (index: number) => Answer = () => ({ status: 200 }),
): Promise<HttpReceiver> {
  const requests: ReceivedRequest[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const answer = plan(requests.length);
      const text = Buffer.concat(chunks).toString('utf8');
      const received: ReceivedRequest = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: text === '' ? undefined : JSON.parse(text),
        answer: answer === 'reset' ? 'reset' : answer.afterMillis === undefined ? answer.status : 'none',
        arrivedUnixMillis: Date.now(),
      };
      requests.push(received);
      if (answer === 'reset') {
        received.closedUnixMillis = Date.now();
        request.socket.destroy();
        return;
      }
      const reply = () => {
        received.answer = answer.status;
        response.writeHead(answer.status, answer.headers);
        response.end(answer.body ?? '');
      };
      const timer = answer.afterMillis === undefined ? undefined : setTimeout(reply, answer.afterMillis);
      response.on('close', () => {
        clearTimeout(timer);
        received.closedUnixMillis = Date.now();
      });
      if (timer === undefined) reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    accepted: () => requests.filter((r) => typeof r.answer === 'number' && r.answer >= 200 && r.answer < 300),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Fails the first answers with the given ones, then accepts everything. */
export function failingFirst(...failures: Answer[]): (index: number) => Answer {
  return (index) => failures[index] ?? { status: 202 };
}
