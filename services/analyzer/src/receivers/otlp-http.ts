import type { AddressInfo, Socket } from 'node:net';
import { GrpcCode, KeyscopeError } from '@keyscope/errors';
import {
  type ConsumeResult,
  encodeExportResponse,
  encodeRpcStatus,
  exportResponseJson,
  rpcStatusJson,
} from '@keyscope/otlp';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import {
  ANALYZER_SHUTTING_DOWN,
  ANALYZER_UNSUPPORTED_CONTENT_ENCODING,
  ANALYZER_UNSUPPORTED_MEDIA_TYPE,
} from '../errors.ts';
import type { Logger } from '../logger.ts';
import { type ContentCoding, RequestAbortedError, readRequestBody } from './http-body.ts';
import { type Ingest, isIngestFailure, type PayloadEncoding } from './ingest.ts';
import type { IngestFailure } from './ingest-failure.ts';
import type { Receiver } from './listen-address.ts';
import { chunkedPayload, ScratchBuffer } from './payload-bytes.ts';

export const OTLP_HTTP_TRACES_PATH = '/v1/traces';

export interface OtlpHttpReceiverOptions {
  readonly host: string;
  /** 0 picks a free port; `address.port` says which. */
  readonly port: number;
  /** Applied to the body as it arrives and again after decompression. */
  readonly bodyLimitBytes: number;
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
 * OTLP/HTTP traces receiver: `POST /v1/traces`, binary protobuf or JSON, gzip or identity,
 * answered in the request's encoding with the status codes of the OTLP specification
 * (opentelemetry-proto docs/specification.md, "OTLP/HTTP"). Resolves once listening.
 */
export async function startOtlpHttpReceiver(options: OtlpHttpReceiverOptions): Promise<Receiver> {
  const { ingest, logger } = options;
  // While stopping, requests still arriving on open connections get an OTLP answer (503 with
  // Retry-After) instead of fastify's own 503.
  const app = Fastify({ logger: false, exposeHeadRoutes: false, return503OnClosing: false });
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

  // The body is read by readRequestBody, which bounds it after decompression; fastify's own
  // parsers would buffer it first. The content type has been checked by then (onRequest).
  app.removeAllContentTypeParsers();
  // Bodies are joined here only while they are decoded (payload-bytes.ts).
  const scratch = new ScratchBuffer();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  app.route({
    method: 'POST',
    url: OTLP_HTTP_TRACES_PATH,
    // Runs before fastify looks at the content type, so every refusal gets an OTLP answer.
    onRequest: async (request, reply) => {
      ingest.received('http');
      if (closing) {
        const error = new KeyscopeError(ANALYZER_SHUTTING_DOWN, 'this receiver is stopping; retry');
        return sendFailure(reply, fallbackEncoding(request), ingest.refuse('http', error));
      }
      const negotiated = negotiate(request);
      if (negotiated instanceof KeyscopeError) {
        return sendFailure(reply, fallbackEncoding(request), ingest.refuse('http', negotiated));
      }
    },
    handler: async (request, reply) => {
      const { encoding, coding } = negotiate(request) as Negotiated;
      const slot = ingest.admit('http');
      if (isIngestFailure(slot)) return sendFailure(reply, encoding, slot);
      let body: Awaited<ReturnType<typeof readRequestBody>>;
      try {
        body = await readRequestBody(request.raw, coding, options.bodyLimitBytes);
      } catch (error) {
        slot.release();
        if (error instanceof RequestAbortedError) {
          ingest.aborted('http');
          reply.hijack();
          reply.raw.destroy();
          return;
        }
        // The rest of the body was not read: end the connection after answering.
        reply.header('connection', 'close');
        return sendFailure(reply, encoding, ingest.refuse('http', error));
      }
      const outcome = await ingest.export('http', slot, {
        encoding,
        bytes: chunkedPayload(body.chunks, body.byteLength, scratch),
        compressedBytes: body.compressedBytes,
      });
      if (!outcome.accepted) return sendFailure(reply, encoding, outcome.failure);
      return sendSuccess(reply, encoding, outcome.result);
    },
  });

  app.route({
    method: [...OTHER_METHODS],
    url: OTLP_HTTP_TRACES_PATH,
    handler: async (request, reply) => {
      reply.header('allow', 'POST');
      return sendStatus(
        reply,
        fallbackEncoding(request),
        405,
        GrpcCode.INVALID_ARGUMENT,
        `${OTLP_HTTP_TRACES_PATH} accepts POST, received ${request.method}`,
      );
    },
  });

  app.setNotFoundHandler(async (request, reply) =>
    sendStatus(
      reply,
      fallbackEncoding(request),
      404,
      GrpcCode.NOT_FOUND,
      `no OTLP endpoint at ${request.url}; traces go to POST ${OTLP_HTTP_TRACES_PATH}`,
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

function sendSuccess(reply: FastifyReply, encoding: PayloadEncoding, result: ConsumeResult) {
  reply.code(200).type(CONTENT_TYPE[encoding]);
  return encoding === 'json'
    ? reply.send(JSON.stringify(exportResponseJson(result)))
    : reply.send(toBuffer(encodeExportResponse(result)));
}

/** Every OTLP/HTTP failure carries a google.rpc.Status, in the request's encoding. */
function sendStatus(
  reply: FastifyReply,
  encoding: PayloadEncoding,
  httpStatus: number,
  grpcCode: number,
  message: string,
) {
  reply.code(httpStatus).type(CONTENT_TYPE[encoding]);
  return encoding === 'json'
    ? reply.send(JSON.stringify(rpcStatusJson(grpcCode, message)))
    : reply.send(toBuffer(encodeRpcStatus(grpcCode, message)));
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
