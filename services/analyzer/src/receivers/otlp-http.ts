import { STATUS_CODES } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { GrpcCode, KeyscopeError } from '@keyscope/errors';
import {
  type ConsumeResult,
  encodeExportResponse,
  encodeRpcStatus,
  exportResponseJson,
  type OtlpSignal,
  rpcStatusJson,
} from '@keyscope/otlp';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import {
  ANALYZER_HEADERS_TIMEOUT,
  ANALYZER_SHUTTING_DOWN,
  ANALYZER_UNSUPPORTED_CONTENT_ENCODING,
  ANALYZER_UNSUPPORTED_MEDIA_TYPE,
} from '../errors.ts';
import type { Receiver } from '../listen-address.ts';
import type { Logger } from '../logger.ts';
import { BufferedBodies } from './buffered-bodies.ts';
import { type ContentCoding, RequestAbortedError, type RequestBody, readRequestBody } from './http-body.ts';
import { type Ingest, isIngestFailure } from './ingest.ts';
import type { IngestFailure } from './ingest-failure.ts';
import type { PayloadEncoding } from './payload.ts';
import { chunkedPayload, ScratchBuffer } from './payload-bytes.ts';

export const OTLP_HTTP_TRACES_PATH = '/v1/traces';
export const OTLP_HTTP_LOGS_PATH = '/v1/logs';

/** Each signal's path (OTLP/HTTP's defaults). */
const SIGNAL_PATHS: Readonly<Record<OtlpSignal, string>> = {
  traces: OTLP_HTTP_TRACES_PATH,
  logs: OTLP_HTTP_LOGS_PATH,
};

export interface OtlpHttpReceiverOptions {
  readonly host: string;
  /** 0 picks a free port; `address.port` says which. */
  readonly port: number;
  /** Applied to the body as it arrives and again after decompression. */
  readonly bodyLimitBytes: number;
  /** From a request's first byte to the end of its headers (node's `headersTimeout`). */
  readonly headersTimeoutMillis: number;
  /** From the moment the receiver starts reading a body to its end; 408 past it. */
  readonly bodyTimeoutMillis: number;
  readonly keepAliveTimeoutMillis: number;
  /** Bodies being read, over all connections, before they take an admission slot; 503 past it. */
  readonly maxBufferedBodyBytes: number;
  /** Sent as Retry-After with every retryable failure (429 / 503). */
  readonly retryAfterSeconds: number;
  readonly ingest: Ingest;
  readonly logger: Logger;
}

interface Negotiated {
  readonly encoding: PayloadEncoding;
  readonly coding: ContentCoding;
}

const MEDIA_TYPES: Readonly<Record<string, PayloadEncoding>> = {
  'application/x-protobuf': 'protobuf',
  'application/json': 'json',
};

const CONTENT_TYPE: Readonly<Record<PayloadEncoding, string>> = {
  protobuf: 'application/x-protobuf',
  json: 'application/json',
};

const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/**
 * OTLP/HTTP receiver of traces (`POST /v1/traces`) and logs (`POST /v1/logs`), binary protobuf or
 * JSON, gzip or identity, answered in the request's encoding with the status codes of the OTLP
 * specification (opentelemetry-proto docs/specification.md, "OTLP/HTTP"). Resolves once listening.
 * Both paths go through the same reading, admission and ingest (ingest.ts); only the decoder and
 * the response message differ.
 *
 * Slow senders hold no admission slot: a request is admitted once its body has arrived, the body
 * must arrive within `bodyTimeoutMillis` and the headers within `headersTimeoutMillis` (else 408
 * and the connection closes), and a connection's requests are handled one at a time, so that one
 * connection holds at most one slot however many requests it pipelines.
 */
export async function startOtlpHttpReceiver(options: OtlpHttpReceiverOptions): Promise<Receiver> {
  const { ingest, logger } = options;
  const app = Fastify({
    logger: false,
    exposeHeadRoutes: false,
    // While stopping, requests still arriving on open connections get an OTLP answer (503 with
    // Retry-After) instead of fastify's own 503.
    return503OnClosing: false,
    keepAliveTimeout: options.keepAliveTimeoutMillis,
    http: {
      // The body has its own timeout (readRequestBody), answered in OTLP's shape. Node's
      // whole-request timeout, 5 min unless set, would also refuse a longer headers timeout.
      requestTimeout: 0,
      headersTimeout: options.headersTimeoutMillis,
      // Node checks the headers timeout every this often (30 s by default): without it a 10 s
      // timeout would close a connection anywhere between 10 and 40 s.
      connectionsCheckingInterval: Math.min(1_000, options.headersTimeoutMillis),
    },
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => {
      // A reset connection has nobody to answer.
      if (error.code === 'ECONNRESET' || socket.destroyed) return;
      if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
        // Node times out a connection that never sent a byte the same way: nothing to count.
        if (socket.bytesRead === 0) {
          socket.destroy();
          return;
        }
        ingest.received('http');
        const timeout = new KeyscopeError(
          ANALYZER_HEADERS_TIMEOUT,
          `request headers must arrive within ${options.headersTimeoutMillis} ms`,
        );
        const failure = ingest.refuse('http', timeout);
        endWithStatus(socket, failure.httpStatus, failure.grpcCode, failure.message);
        return;
      }
      if (error.code === 'HPE_HEADER_OVERFLOW') {
        endWithStatus(socket, 431, GrpcCode.INVALID_ARGUMENT, 'request headers are larger than node accepts');
        return;
      }
      endWithStatus(
        socket,
        400,
        GrpcCode.INVALID_ARGUMENT,
        `malformed HTTP request (${error.code ?? 'unknown'})`,
      );
    },
  });
  let closing = false;

  // Requests received but not yet answered, per connection. While stopping, a connection is ended
  // once all of its requests are answered: server.close() ends only the connections idle at that
  // moment, and a keep-alive connection answered later would hold the drain open until the timeout.
  const pending = new WeakMap<Socket, number>();
  app.addHook('onRequest', async (request) => {
    const socket = request.raw.socket;
    pending.set(socket, (pending.get(socket) ?? 0) + 1);
  });
  app.addHook('onResponse', async (request) => {
    const socket = request.raw.socket;
    const left = (pending.get(socket) ?? 1) - 1;
    pending.set(socket, left);
    if (closing && left === 0) socket.end();
  });

  // Node hands the handler every request a pipelined connection has sent, at once, while HTTP/1.1
  // answers them in order anyway: each waits here for the one before it on its connection.
  const turns = new WeakMap<Socket, Promise<void>>();
  async function takeTurn(socket: Socket): Promise<() => void> {
    const previous = turns.get(socket);
    let endTurn!: () => void;
    turns.set(
      socket,
      new Promise<void>((resolve) => {
        endTurn = resolve;
      }),
    );
    if (previous) await previous;
    return endTurn;
  }
  const bufferedBodies = new BufferedBodies(options.maxBufferedBodyBytes);

  // The body is read by readRequestBody, which bounds it after decompression; fastify's own
  // parsers would buffer it first. The content type has been checked by then (onRequest).
  app.removeAllContentTypeParsers();
  // Bodies are joined here only while they are decoded (payload-bytes.ts).
  const scratch = new ScratchBuffer();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  for (const [signal, path] of Object.entries(SIGNAL_PATHS) as [OtlpSignal, string][]) {
    app.route({
      method: 'POST',
      url: path,
      // Runs before fastify looks at the content type, so every refusal gets an OTLP answer.
      onRequest: async (request, reply) => {
        ingest.received('http');
        if (closing) {
          const error = new KeyscopeError(ANALYZER_SHUTTING_DOWN, 'this receiver is stopping; retry');
          return sendFailure(reply, fallbackEncoding(request), ingest.refuse('http', error, 0, signal));
        }
        const negotiated = negotiate(request);
        if (negotiated instanceof KeyscopeError) {
          return sendFailure(reply, fallbackEncoding(request), ingest.refuse('http', negotiated, 0, signal));
        }
      },
      handler: async (request, reply) => {
        const endTurn = await takeTurn(request.raw.socket);
        try {
          return await exportRequest(signal, request, reply);
        } finally {
          endTurn();
        }
      },
    });

    app.route({
      method: [...OTHER_METHODS],
      url: path,
      handler: async (request, reply) => {
        reply.header('allow', 'POST');
        return sendStatus(
          reply,
          fallbackEncoding(request),
          405,
          GrpcCode.INVALID_ARGUMENT,
          `${path} accepts POST, received ${request.method}`,
        );
      },
    });
  }

  async function exportRequest(signal: OtlpSignal, request: FastifyRequest, reply: FastifyReply) {
    const { encoding, coding } = negotiate(request) as Negotiated;
    const buffer = bufferedBodies.open();
    let body: RequestBody;
    try {
      body = await readRequestBody(request.raw, coding, options.bodyLimitBytes, {
        timeoutMillis: options.bodyTimeoutMillis,
        buffer,
      });
    } catch (error) {
      if (error instanceof RequestAbortedError) {
        ingest.aborted('http');
        reply.hijack();
        reply.raw.destroy();
        return;
      }
      // The rest of the body was not read: end the connection after answering.
      reply.header('connection', 'close');
      return sendFailure(reply, encoding, ingest.refuse('http', error, 0, signal));
    } finally {
      // Complete or refused, the body leaves this bound: its admission slot bounds it from here.
      buffer.release();
    }
    const slot = ingest.admit('http');
    if (isIngestFailure(slot)) return sendFailure(reply, encoding, slot);
    const outcome = await ingest.export('http', slot, {
      signal,
      encoding,
      bytes: chunkedPayload(body.chunks, body.byteLength, scratch),
      compressedBytes: body.compressedBytes,
    });
    if (!outcome.accepted) return sendFailure(reply, encoding, outcome.failure);
    return sendSuccess(reply, encoding, outcome.result, signal);
  }

  app.setNotFoundHandler(async (request, reply) =>
    sendStatus(
      reply,
      fallbackEncoding(request),
      404,
      GrpcCode.NOT_FOUND,
      `no OTLP endpoint at ${request.url}; traces go to POST ${OTLP_HTTP_TRACES_PATH}, logs to POST ${OTLP_HTTP_LOGS_PATH}`,
    ),
  );

  app.setErrorHandler(async (error: { statusCode?: number; message: string }, request, reply) => {
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      return sendStatus(reply, fallbackEncoding(request), status, GrpcCode.INVALID_ARGUMENT, error.message);
    }
    logger.error(`otlp-http: ${error instanceof Error ? error.stack : error.message}`);
    return sendStatus(reply, fallbackEncoding(request), 500, GrpcCode.INTERNAL, 'internal error');
  });

  function sendFailure(reply: FastifyReply, encoding: PayloadEncoding, failure: IngestFailure) {
    if (failure.retryable) reply.header('retry-after', String(options.retryAfterSeconds));
    return sendStatus(reply, encoding, failure.httpStatus, failure.grpcCode, failure.message);
  }

  await app.listen({ host: options.host, port: options.port });
  const bound = app.server.address() as AddressInfo;

  let stopping: Promise<void> | undefined;
  return {
    address: { host: options.host, port: bound.port },
    bufferedBytes: () => bufferedBodies.heldBytes(),
    stop(drainTimeoutMillis) {
      stopping ??= closeWithin(drainTimeoutMillis);
      return stopping;
    },
  };

  async function closeWithin(drainTimeoutMillis: number): Promise<void> {
    closing = true;
    const timer = setTimeout(() => app.server.closeAllConnections(), drainTimeoutMillis);
    try {
      await app.close();
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The request's encoding and content coding, or the error that refuses it (415). */
function negotiate(request: FastifyRequest): Negotiated | KeyscopeError {
  const contentType = request.headers['content-type'] ?? '';
  const [mediaType = '', ...parameters] = contentType.split(';').map((part) => part.trim().toLowerCase());
  const encoding = MEDIA_TYPES[mediaType];
  const charset = parameters.find((parameter) => parameter.startsWith('charset='))?.slice('charset='.length);
  if (encoding === undefined || (charset !== undefined && !['utf-8', 'utf8', '"utf-8"'].includes(charset))) {
    return new KeyscopeError(
      ANALYZER_UNSUPPORTED_MEDIA_TYPE,
      `Content-Type must be application/x-protobuf or application/json, received ${JSON.stringify(contentType)}`,
    );
  }
  const contentEncoding = (request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (contentEncoding !== 'gzip' && contentEncoding !== 'identity') {
    return new KeyscopeError(
      ANALYZER_UNSUPPORTED_CONTENT_ENCODING,
      `Content-Encoding must be gzip or identity, received ${JSON.stringify(contentEncoding)}`,
    );
  }
  return { encoding, coding: contentEncoding };
}

/** For answers to requests whose encoding is unknown: JSON if they look like JSON, else protobuf. */
function fallbackEncoding(request: FastifyRequest): PayloadEncoding {
  return (request.headers['content-type'] ?? '').toLowerCase().includes('json') ? 'json' : 'protobuf';
}

function sendSuccess(
  reply: FastifyReply,
  encoding: PayloadEncoding,
  result: ConsumeResult,
  signal: OtlpSignal,
) {
  reply.code(200).type(CONTENT_TYPE[encoding]);
  return encoding === 'json'
    ? reply.send(JSON.stringify(exportResponseJson(result, signal)))
    : reply.send(toBuffer(encodeExportResponse(result, signal)));
}

/**
 * Every OTLP/HTTP failure carries a google.rpc.Status, in the request's encoding. A request
 * answered before its body has arrived closes its connection: node would otherwise keep reading,
 * and discarding, a body nobody waits for, for as long as the sender takes to send it.
 */
function sendStatus(
  reply: FastifyReply,
  encoding: PayloadEncoding,
  httpStatus: number,
  grpcCode: number,
  message: string,
) {
  if (!reply.request.raw.complete) reply.header('connection', 'close');
  reply.code(httpStatus).type(CONTENT_TYPE[encoding]);
  return encoding === 'json'
    ? reply.send(JSON.stringify(rpcStatusJson(grpcCode, message)))
    : reply.send(toBuffer(encodeRpcStatus(grpcCode, message)));
}

/**
 * Answers on a connection that has no request object (its headers did not arrive or do not
 * parse), in protobuf since the request's encoding is unknown, then closes it.
 */
function endWithStatus(socket: Socket, httpStatus: number, grpcCode: number, message: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = toBuffer(encodeRpcStatus(grpcCode, message));
  const head = [
    `HTTP/1.1 ${httpStatus} ${STATUS_CODES[httpStatus] ?? ''}`,
    `content-type: ${CONTENT_TYPE.protobuf}`,
    `content-length: ${body.byteLength}`,
    'connection: close',
    '',
    '',
  ].join('\r\n');
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]), () => socket.destroy());
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
