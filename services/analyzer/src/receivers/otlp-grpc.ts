import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { GrpcCode, KeyscopeError } from '@keyscope/errors';
import { encodeExportResponse, type OtlpSignal } from '@keyscope/otlp';
import {
  ANALYZER_MALFORMED_MESSAGE,
  ANALYZER_SHUTTING_DOWN,
  ANALYZER_UNSUPPORTED_MESSAGE_ENCODING,
} from '../errors.ts';
import type { Receiver } from '../listen-address.ts';
import type { Logger } from '../logger.ts';
import { BufferedBodies } from './buffered-bodies.ts';
import { MESSAGE_ENCODINGS, type MessageEncoding, readGrpcMessage } from './grpc-message.ts';
import { RequestAbortedError, type RequestBody } from './http-body.ts';
import { type Ingest, isIngestFailure } from './ingest.ts';
import type { IngestFailure } from './ingest-failure.ts';
import { chunkedPayload, ScratchBuffer } from './payload-bytes.ts';

export const TRACE_SERVICE_EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
export const LOGS_SERVICE_EXPORT_PATH = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';

export interface OtlpGrpcReceiverOptions {
  readonly host: string;
  /** 0 picks a free port; `address.port` says which. */
  readonly port: number;
  /**
   * Applied to the length the message's prefix declares and again after decompression:
   * RESOURCE_EXHAUSTED past it (which OTLP clients do not retry), before the message is read.
   */
  readonly maxReceiveMessageBytes: number;
  /**
   * Calls one connection may have open at once, advertised in HTTP/2 SETTINGS: a client waits
   * before opening more.
   */
  readonly maxConcurrentStreams: number;
  /**
   * The server pings each connection this often and closes it when a ping goes unanswered for
   * `keepaliveTimeoutMillis`, so that a peer that vanished without closing does not hold its
   * streams forever.
   */
  readonly keepaliveTimeMillis: number;
  readonly keepaliveTimeoutMillis: number;
  /** From a call's headers to the end of its message; DEADLINE_EXCEEDED past it. */
  readonly messageTimeoutMillis: number;
  /** Messages still arriving, over all calls and connections, in bytes; UNAVAILABLE past it. */
  readonly maxBufferedMessageBytes: number;
  readonly ingest: Ingest;
  readonly logger: Logger;
}

const SIGNAL_BY_PATH: ReadonlyMap<string, OtlpSignal> = new Map([
  [TRACE_SERVICE_EXPORT_PATH, 'traces'],
  [LOGS_SERVICE_EXPORT_PATH, 'logs'],
]);

const ACCEPT_ENCODING = MESSAGE_ENCODINGS.join(',');
/** grpc-timeout: at most 8 digits and a unit (gRPC over HTTP/2, "Requests"). */
const GRPC_TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const MILLIS_PER_TIMEOUT_UNIT: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/**
 * OTLP/gRPC receiver of traces (`opentelemetry.proto.collector.trace.v1.TraceService/Export`) and
 * logs (`opentelemetry.proto.collector.logs.v1.LogsService/Export`): a unary gRPC server on
 * node:http2 (gRPC over HTTP/2: one 5-byte length-prefixed message each way, the status in
 * trailers), accepting `grpc-encoding` gzip, deflate or identity, both signals through one ingest,
 * answering with the codes of the OTLP specification: INVALID_ARGUMENT for bad payloads,
 * UNAVAILABLE when saturated or when the pipeline asks the sender to retry. Resolves once
 * listening. The message reaches the otlp decoder as the bytes that arrived: no proto loader, the
 * otlp package owns the wire format.
 *
 * Slow senders hold no admission slot: a call takes one only once its whole message has arrived.
 * Until then its bytes, counted as they arrive, hold part of `maxBufferedMessageBytes` over all
 * calls (UNAVAILABLE past it), and the message must arrive within `messageTimeoutMillis`
 * (DEADLINE_EXCEEDED). A refused call is answered and its stream reset at once, so its bytes are
 * released and the sender stops sending them.
 */
export async function startOtlpGrpcReceiver(options: OtlpGrpcReceiverOptions): Promise<Receiver> {
  const { ingest, logger } = options;
  const server = http2.createServer({
    settings: { maxConcurrentStreams: options.maxConcurrentStreams },
    // Node's own bound (10 MB a connection by default) counts what nghttp2 buffers and refuses
    // new streams past it with ENHANCE_YOUR_CALM, which gRPC clients do not retry. Messages are
    // bounded by maxBufferedMessageBytes over all connections instead.
    maxSessionMemory: Number.MAX_SAFE_INTEGER,
  });
  const connections = new Set<http2.ServerHttp2Session>();
  const bufferedMessages = new BufferedBodies(options.maxBufferedMessageBytes);
  const scratch = new ScratchBuffer();
  let closing = false;

  server.on('session', (session) => {
    connections.add(session);
    session.once('close', () => connections.delete(session));
    pingUntilClosed(session, options.keepaliveTimeMillis, options.keepaliveTimeoutMillis);
  });
  // A connection's protocol errors end that connection; nothing to answer.
  server.on('sessionError', () => {});

  server.on('stream', (stream, headers) => {
    // A stream the sender resets errors, then closes: the call counts as aborted on 'close'.
    stream.on('error', () => {});
    const signal = SIGNAL_BY_PATH.get(String(headers[':path']));
    if (headers[':method'] !== 'POST') {
      stream.respond({ ':status': 405, allow: 'POST' }, { endStream: true });
      return;
    }
    if (!String(headers['content-type'] ?? '').startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, { endStream: true });
      return;
    }
    if (signal === undefined) {
      sendStatus(stream, GrpcCode.UNIMPLEMENTED, `no OTLP service method ${String(headers[':path'])}`);
      return;
    }
    exportCall(signal, stream, headers).catch((error: unknown) => {
      // exportCall answers every failure itself; this is a bug in it.
      logger.error(`otlp-grpc: ${error instanceof Error ? error.stack : String(error)}`);
      sendStatus(stream, GrpcCode.INTERNAL, 'internal error');
    });
  });

  async function exportCall(
    signal: OtlpSignal,
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
  ): Promise<void> {
    ingest.received('grpc');
    const refuse = (error: unknown) => sendFailure(stream, ingest.refuse('grpc', error, 0, signal));
    if (closing) {
      refuse(new KeyscopeError(ANALYZER_SHUTTING_DOWN, 'this receiver is stopping; retry'));
      return;
    }
    const encoding = String(headers['grpc-encoding'] ?? 'identity').toLowerCase();
    if (!(MESSAGE_ENCODINGS as readonly string[]).includes(encoding)) {
      // UNIMPLEMENTED, with the encodings this receiver accepts in grpc-accept-encoding.
      const error = new KeyscopeError(
        ANALYZER_UNSUPPORTED_MESSAGE_ENCODING,
        `grpc-encoding must be one of ${ACCEPT_ENCODING}, received ${JSON.stringify(encoding)}`,
      );
      refuse(error);
      return;
    }
    const timeoutMillis = callTimeoutMillis(headers['grpc-timeout'], options.messageTimeoutMillis);
    if (timeoutMillis instanceof KeyscopeError) {
      refuse(timeoutMillis);
      return;
    }
    const buffer = bufferedMessages.open();
    let message: RequestBody;
    try {
      message = await readGrpcMessage(stream, {
        encoding: encoding as MessageEncoding,
        limitBytes: options.maxReceiveMessageBytes,
        timeoutMillis,
        buffer,
      });
    } catch (error) {
      if (error instanceof RequestAbortedError) {
        ingest.aborted('grpc');
        return;
      }
      refuse(error);
      return;
    } finally {
      // Complete or refused, the message leaves this bound: its admission slot bounds it from here.
      buffer.release();
    }
    const slot = ingest.admit('grpc');
    if (isIngestFailure(slot)) {
      sendFailure(stream, slot);
      return;
    }
    const outcome = await ingest.export('grpc', slot, {
      signal,
      encoding: 'protobuf',
      bytes: chunkedPayload(message.chunks, message.byteLength, scratch),
      compressedBytes: message.compressedBytes,
    });
    if (outcome.accepted) sendMessage(stream, encodeExportResponse(outcome.result, signal));
    else sendFailure(stream, outcome.failure);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.host, port: options.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;

  let stopping: Promise<void> | undefined;
  return {
    address: { host: options.host, port: bound.port },
    bufferedBytes: () => bufferedMessages.heldBytes(),
    stop(drainTimeoutMillis) {
      stopping ??= new Promise<void>((resolve) => {
        closing = true;
        const timer = setTimeout(() => {
          for (const connection of connections) connection.destroy();
        }, drainTimeoutMillis);
        // No new connections; each open one is sent GOAWAY and closes once its calls are answered.
        server.close(() => {
          clearTimeout(timer);
          resolve();
        });
        for (const connection of connections) connection.close();
      });
      return stopping;
    },
  };
}

/**
 * The time the call's message has to arrive: `messageTimeoutMillis`, or the call's own deadline
 * (grpc-timeout) when that is sooner — past it the sender has given up anyway.
 */
function callTimeoutMillis(header: string | string[] | undefined, messageTimeoutMillis: number) {
  if (header === undefined) return messageTimeoutMillis;
  const match = GRPC_TIMEOUT.exec(String(header));
  if (match === null) {
    return new KeyscopeError(
      ANALYZER_MALFORMED_MESSAGE,
      `grpc-timeout must be up to 8 digits and a unit (H, M, S, m, u, n), received ${JSON.stringify(header)}`,
    );
  }
  const millis = Number(match[1]) * MILLIS_PER_TIMEOUT_UNIT[match[2]!]!;
  return Math.max(1, Math.min(messageTimeoutMillis, Math.ceil(millis)));
}

function sendFailure(stream: http2.ServerHttp2Stream, failure: IngestFailure): void {
  sendStatus(stream, failure.grpcCode, failure.message);
}

function statusHeaders(code: number, message: string): http2.OutgoingHttpHeaders {
  return {
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-accept-encoding': ACCEPT_ENCODING,
    'grpc-status': String(code),
    'grpc-message': percentEncoded(message),
  };
}

/**
 * Ends the call with a status and no message (a Trailers-Only response). A request still
 * arriving is reset with NO_ERROR (RFC 9113, 8.1): the sender stops sending it, and what it sent
 * is not kept.
 */
function sendStatus(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.closed) return;
  if (!stream.headersSent) stream.respond(statusHeaders(code, message), { endStream: true });
  if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/** Answers the call with one uncompressed message, then status OK in the trailers. */
function sendMessage(stream: http2.ServerHttp2Stream, bytes: Uint8Array): void {
  if (stream.destroyed || stream.closed) return;
  const framed = Buffer.allocUnsafe(5 + bytes.byteLength);
  framed.writeUInt8(0, 0);
  framed.writeUInt32BE(bytes.byteLength, 1);
  framed.set(bytes, 5);
  stream.respond(
    { ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': ACCEPT_ENCODING },
    { waitForTrailers: true },
  );
  stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(GrpcCode.OK) }));
  stream.end(framed);
}

/** grpc-message: UTF-8, with bytes outside printable ASCII and '%' percent-encoded. */
function percentEncoded(message: string): string {
  let encoded = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    encoded +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return encoded;
}

/**
 * Pings `session` every `timeMillis` after the last answer and destroys it when a ping goes
 * unanswered for `timeoutMillis`.
 */
function pingUntilClosed(session: http2.ServerHttp2Session, timeMillis: number, timeoutMillis: number): void {
  let unanswered: NodeJS.Timeout | undefined;
  const next = setTimeout(function ping() {
    if (session.closed || session.destroyed) return;
    unanswered = setTimeout(() => session.destroy(), timeoutMillis);
    const sent = session.ping((error) => {
      clearTimeout(unanswered);
      if (error === null) next.refresh();
    });
    if (!sent) clearTimeout(unanswered);
  }, timeMillis);
  session.once('close', () => {
    clearTimeout(next);
    clearTimeout(unanswered);
  });
}
