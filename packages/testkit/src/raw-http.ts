import { connect, type Socket } from 'node:net';

/**
 * HTTP/1.1 over a bare TCP socket, for what fetch cannot do: send headers and only part of a body,
 * pipeline requests, or watch when the server closes the connection.
 */

export interface RawRequestOptions {
  readonly contentType?: string;
  /** Declared in the head; the body's own length by default. */
  readonly contentLength?: number;
}

/** `POST <path>` with `body`, as the bytes a client writes. */
export function rawPost(path: string, body: Uint8Array, options: RawRequestOptions = {}): Buffer {
  const head = [
    `POST ${path} HTTP/1.1`,
    'host: 127.0.0.1',
    `content-type: ${options.contentType ?? 'application/x-protobuf'}`,
    `content-length: ${options.contentLength ?? body.byteLength}`,
    '',
    '',
  ].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

export interface RawConnection {
  readonly socket: Socket;
  /** Everything received so far. */
  received(): Buffer;
  /** Whether the server has closed (or reset) the connection. */
  isClosed(): boolean;
  /** Resolves with everything received once the connection is closed. */
  readonly closed: Promise<Buffer>;
}

export async function openRawConnection(port: number): Promise<RawConnection> {
  const socket = connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let isClosed = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  // A reset after the server's answer is still a close; the test reads what arrived before it.
  socket.on('error', () => {});
  const closed = new Promise<Buffer>((resolve) =>
    socket.on('close', () => {
      isClosed = true;
      resolve(Buffer.concat(chunks));
    }),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => Buffer.concat(chunks), isClosed: () => isClosed, closed };
}

export interface RawResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** The complete Content-Length-framed responses in `bytes`, in order; a partial one at the end is left out. */
export function parseResponses(bytes: Buffer): RawResponse[] {
  const responses: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = bytes.indexOf('\r\n\r\n', at, 'latin1');
    if (headEnd < 0) return responses;
    const [statusLine = '', ...lines] = bytes.subarray(at, headEnd).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = headEnd + 4;
    if (bytes.length < bodyStart + length) return responses;
    responses.push({
      status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]),
      headers,
      body: bytes.subarray(bodyStart, bodyStart + length),
    });
    at = bodyStart + length;
  }
}
