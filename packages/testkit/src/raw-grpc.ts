import * as http2 from 'node:http2';

/**
 * gRPC calls over a bare HTTP/2 connection, for what a gRPC client cannot do: declare a message
 * longer than what it sends, send nothing at all, or end the call mid-message.
 */

export interface RawGrpcCallOptions {
  /** The method's path, e.g. `/opentelemetry.proto.collector.trace.v1.TraceService/Export`. */
  readonly path: string;
  /** Written as they are, in order (see `grpcPrefix`). */
  readonly chunks?: readonly Uint8Array[];
  /** Half-close the request once `chunks` are written; by default the call stays open. */
  readonly end?: boolean;
  readonly headers?: http2.OutgoingHttpHeaders;
}

export interface RawGrpcAnswer {
  /** grpc-status, from the headers of a Trailers-Only answer or from the trailers. */
  readonly status: number | undefined;
  readonly message: string;
  /** The RST_STREAM code the stream closed with (0: NO_ERROR, or no reset). */
  readonly rstCode: number;
  /** When the stream closed, by Date.now(). */
  readonly closedAt: number;
}

export interface RawGrpcCall {
  readonly stream: http2.ClientHttp2Stream;
  /** Resolves once the stream has closed. */
  readonly answer: Promise<RawGrpcAnswer>;
}

/** The 5 bytes before a gRPC message: its compressed flag and its length, big-endian. */
export function grpcPrefix(declaredBytes: number, compressed = false): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt8(compressed ? 1 : 0, 0);
  prefix.writeUInt32BE(declaredBytes, 1);
  return prefix;
}

export function connectHttp2(port: number): http2.ClientHttp2Session {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  // A session the server ends (GOAWAY, reset) closes its calls; their answers say how.
  session.on('error', () => {});
  return session;
}

export function openRawGrpcCall(session: http2.ClientHttp2Session, options: RawGrpcCallOptions): RawGrpcCall {
  const stream = session.request({
    ':method': 'POST',
    ':path': options.path,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...options.headers,
  });
  stream.on('error', () => {});
  const answer = new Promise<RawGrpcAnswer>((resolve) => {
    let status: string | undefined;
    let message = '';
    const read = (headers: http2.IncomingHttpHeaders) => {
      if (headers['grpc-status'] !== undefined) status = String(headers['grpc-status']);
      if (headers['grpc-message'] !== undefined)
        message = decodeURIComponent(String(headers['grpc-message']));
    };
    stream.on('response', read);
    stream.on('trailers', read);
    stream.resume();
    stream.on('close', () =>
      resolve({
        status: status === undefined ? undefined : Number(status),
        message,
        rstCode: stream.rstCode ?? 0,
        closedAt: Date.now(),
      }),
    );
  });
  void send(stream, options.chunks ?? [], options.end === true);
  return { stream, answer };
}

const WRITE_BYTES = 64 * 1024;

/**
 * Writes `chunks` a slice at a time, each once the stream has drained the one before: a stream
 * given megabytes in one write does not see the server's answer until the write is done, which
 * it never is once the server has reset the stream.
 */
async function send(stream: http2.ClientHttp2Stream, chunks: readonly Uint8Array[], end: boolean) {
  for (const chunk of chunks) {
    for (let at = 0; at < chunk.byteLength; at += WRITE_BYTES) {
      if (stream.closed || stream.destroyed) return;
      if (!stream.write(chunk.subarray(at, at + WRITE_BYTES))) {
        await new Promise<void>((resolve) => {
          const done = () => {
            stream.off('drain', done);
            stream.off('close', done);
            resolve();
          };
          stream.on('drain', done);
          stream.on('close', done);
        });
      }
    }
  }
  if (end && !stream.closed) stream.end();
}
