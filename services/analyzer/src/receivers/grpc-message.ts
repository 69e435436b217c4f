import type { Readable } from 'node:stream';
import { createGunzip, createInflate } from 'node:zlib';
import { KeyscopeError } from '@keyscope/errors';
import {
  ANALYZER_BAD_COMPRESSION,
  ANALYZER_MALFORMED_MESSAGE,
  ANALYZER_MESSAGE_TIMEOUT,
  ANALYZER_MESSAGE_TOO_LARGE,
  ANALYZER_SATURATED,
} from '../errors.ts';
import type { BodyReservation } from './buffered-bodies.ts';
import { RequestAbortedError, type RequestBody } from './http-body.ts';

/** The `grpc-encoding`s a message may be compressed with. */
export type MessageEncoding = 'identity' | 'gzip' | 'deflate';
export const MESSAGE_ENCODINGS: readonly MessageEncoding[] = ['identity', 'gzip', 'deflate'];

/** `otlp.grpc.maxBufferedMessageBytes` is reached. */
const bufferFull = () =>
  new KeyscopeError(
    ANALYZER_SATURATED,
    'gRPC messages still arriving on other calls already fill otlp.grpc.maxBufferedMessageBytes',
  );

/** The compressed flag and the big-endian length before each gRPC message. */
const PREFIX_BYTES = 5;

export interface MessageReadOptions {
  readonly encoding: MessageEncoding;
  /** As the prefix declares it, and after decompression. */
  readonly limitBytes: number;
  /** The message, and the end of the call's request stream, must arrive within this long. */
  readonly timeoutMillis: number;
  /** Counts the message's bytes as they arrive, and again as they are inflated. */
  readonly buffer: BodyReservation;
}

/**
 * Reads the one message of a unary gRPC call: a 5-byte prefix (compressed flag, length), the
 * message, then the end of the request stream. Each chunk is counted in `options.buffer` as it
 * arrives, so a call that has sent 1 MB of a declared 4 MiB holds 1 MB of that bound; a message
 * is refused as soon as its prefix declares more than the limit, and inflating stops as soon as
 * the output passes it.
 *
 * Rejects with KS_ANALYZER_MESSAGE_TOO_LARGE, KS_ANALYZER_SATURATED (`options.buffer` is full),
 * KS_ANALYZER_MESSAGE_TIMEOUT, KS_ANALYZER_MALFORMED_MESSAGE, KS_ANALYZER_BAD_COMPRESSION or
 * RequestAbortedError (the call was cancelled or its connection closed). It stops listening to
 * `source` when it settles; the caller answers and ends the call, and releases `options.buffer`.
 */
export function readGrpcMessage(source: Readable, options: MessageReadOptions): Promise<RequestBody> {
  return new Promise((resolve, reject) => {
    const { limitBytes, buffer } = options;
    const prefix = Buffer.alloc(PREFIX_BYTES);
    let prefixFilled = 0;
    /** Whether the message's prefix has arrived. */
    let started = false;
    let compressed = false;
    let declaredBytes = 0;
    let messageBytes = 0;
    const chunks: Buffer[] = [];
    let arrivedBytes = 0;
    let settled = false;

    const timer = setTimeout(() => {
      settle(
        new KeyscopeError(
          ANALYZER_MESSAGE_TIMEOUT,
          `a gRPC message must arrive within ${options.timeoutMillis} ms of its call, ${arrivedBytes} bytes arrived`,
        ),
      );
    }, options.timeoutMillis);

    const settle = (error?: Error, body?: RequestBody) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('close', onClose);
      if (error) {
        chunks.length = 0;
        reject(error);
      } else resolve(body!);
    };

    const malformed = (message: string) => settle(new KeyscopeError(ANALYZER_MALFORMED_MESSAGE, message));

    function onData(chunk: Buffer) {
      arrivedBytes += chunk.length;
      if (!buffer.add(chunk.length)) {
        settle(bufferFull());
        return;
      }
      let at = 0;
      while (at < chunk.length && !settled) {
        if (started && messageBytes === declaredBytes) {
          malformed('a unary call carries one message, received more bytes after it');
          return;
        }
        if (prefixFilled < PREFIX_BYTES) {
          const taken = Math.min(PREFIX_BYTES - prefixFilled, chunk.length - at);
          chunk.copy(prefix, prefixFilled, at, at + taken);
          prefixFilled += taken;
          at += taken;
          if (prefixFilled === PREFIX_BYTES) startMessage();
          continue;
        }
        const taken = Math.min(declaredBytes - messageBytes, chunk.length - at);
        chunks.push(chunk.subarray(at, at + taken));
        messageBytes += taken;
        at += taken;
      }
    }

    function startMessage() {
      started = true;
      const flag = prefix[0]!;
      if (flag > 1) {
        malformed(`a gRPC message's compressed flag must be 0 or 1, received ${flag}`);
        return;
      }
      compressed = flag === 1;
      if (compressed && options.encoding === 'identity') {
        malformed('a gRPC message is flagged compressed but the call has no grpc-encoding');
        return;
      }
      declaredBytes = prefix.readUInt32BE(1);
      if (declaredBytes > limitBytes) settle(tooLarge(`its prefix declares ${declaredBytes}`));
    }

    const tooLarge = (received: string) =>
      new KeyscopeError(
        ANALYZER_MESSAGE_TOO_LARGE,
        `a gRPC message must be at most ${limitBytes} bytes, ${received}`,
      );

    function onEnd() {
      if (!started || messageBytes < declaredBytes) {
        malformed(
          !started
            ? `the call ended without a message, after ${prefixFilled} bytes`
            : `the call ended after ${messageBytes} bytes of a ${declaredBytes}-byte message`,
        );
        return;
      }
      if (!compressed) {
        settle(undefined, { chunks, byteLength: messageBytes, compressedBytes: messageBytes });
        return;
      }
      inflate();
    }

    function onClose() {
      settle(new RequestAbortedError('the call was cancelled before its message was complete'));
    }

    function inflate() {
      const inflater = options.encoding === 'gzip' ? createGunzip() : createInflate();
      const inflated: Buffer[] = [];
      let size = 0;
      inflater.on('data', (chunk: Buffer) => {
        if (settled) return;
        size += chunk.length;
        if (size > limitBytes) settle(tooLarge('received more after decompression'));
        else if (!buffer.add(chunk.length)) {
          settle(bufferFull());
        } else inflated.push(chunk);
        if (settled) inflater.destroy();
      });
      inflater.on('end', () =>
        settle(undefined, { chunks: inflated, byteLength: size, compressedBytes: messageBytes }),
      );
      inflater.on('error', (error: Error) => {
        settle(
          new KeyscopeError(
            ANALYZER_BAD_COMPRESSION,
            `${options.encoding} message cannot be inflated: ${error.message}`,
          ),
        );
      });
      for (const chunk of chunks) inflater.write(chunk);
      inflater.end();
    }

    source.on('data', onData);
    source.on('end', onEnd);
    source.on('close', onClose);
  });
}
