import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { KeyscopeError } from '@keyscope/errors';
import {
  ANALYZER_BAD_COMPRESSION,
  ANALYZER_BODY_TIMEOUT,
  ANALYZER_BODY_TOO_LARGE,
  ANALYZER_SATURATED,
} from '../errors.ts';
import type { BodyReservation } from './buffered-bodies.ts';

export type ContentCoding = 'gzip' | 'identity';

export interface RequestBody {
  /** The body after decompression, in the chunks it arrived in (see payload-bytes.ts). */
  readonly chunks: readonly Buffer[];
  /** Their total size. */
  readonly byteLength: number;
  /** The body as it arrived. */
  readonly compressedBytes: number;
}

/** The sender's connection failed before its body was complete; there is nobody to answer. */
export class RequestAbortedError extends Error {
  override readonly name = 'RequestAbortedError';
}

export interface BodyReadOptions {
  /** The whole body must arrive within this long of the call; no bound when absent. */
  readonly timeoutMillis?: number;
  /** Counts the body's bytes, after decompression, as they are buffered (buffered-bodies.ts). */
  readonly buffer?: BodyReservation;
}

/**
 * Reads a request body of at most `limitBytes`, counted both as it arrives and after
 * decompression. Inflating is streamed and stops as soon as the output passes the limit, so a
 * small gzip body that would inflate to gigabytes never allocates more than the limit (plus one
 * zlib chunk).
 *
 * On refusal the rest of the body is discarded, not destroyed: destroying the request would reset
 * the socket before the 413 reaches the sender. The caller should answer with `Connection: close`.
 *
 * Rejects with KS_ANALYZER_BODY_TOO_LARGE, KS_ANALYZER_BAD_COMPRESSION, KS_ANALYZER_BODY_TIMEOUT,
 * KS_ANALYZER_SATURATED (when `options.buffer` is full) or RequestAbortedError. Whatever it
 * settles with, the caller releases `options.buffer`.
 */
export function readRequestBody(
  source: Readable,
  coding: ContentCoding,
  limitBytes: number,
  options: BodyReadOptions = {},
): Promise<RequestBody> {
  return new Promise((resolve, reject) => {
    // A request whose connection closed while it waited for its turn (a pipelined request behind
    // one that was refused) emits nothing more.
    if (source.destroyed) {
      reject(new RequestAbortedError('the connection closed before the request body was read'));
      return;
    }
    const inflater = coding === 'gzip' ? createGunzip() : undefined;
    const chunks: Buffer[] = [];
    let compressedBytes = 0;
    let size = 0;
    let settled = false;
    let sourceEnded = false;
    const timer =
      options.timeoutMillis === undefined
        ? undefined
        : setTimeout(() => {
            settle(
              new KeyscopeError(
                ANALYZER_BODY_TIMEOUT,
                `request body must arrive within ${options.timeoutMillis} ms, ${compressedBytes} bytes arrived`,
              ),
            );
          }, options.timeoutMillis);

    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      source.off('data', onSourceData);
      source.off('end', onSourceEnd);
      source.off('error', onSourceError);
      source.off('aborted', onSourceError);
      source.off('close', onSourceClose);
      if (inflater) inflater.destroy();
      if (error) {
        source.on('error', ignore);
        source.resume();
        reject(error);
      } else {
        resolve({ chunks, byteLength: size, compressedBytes });
      }
    };

    const tooLarge = (stage: string) =>
      new KeyscopeError(
        ANALYZER_BODY_TOO_LARGE,
        `request body must be at most ${limitBytes} bytes${stage}, received more than that`,
      );

    const collect = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        settle(tooLarge(inflater ? ' after decompression' : ''));
        return;
      }
      if (options.buffer && !options.buffer.add(chunk.length)) {
        settle(
          new KeyscopeError(
            ANALYZER_SATURATED,
            'request bodies still arriving on other connections already fill otlp.http.maxBufferedBodyBytes',
          ),
        );
        return;
      }
      chunks.push(chunk);
    };

    function onSourceData(chunk: Buffer) {
      compressedBytes += chunk.length;
      if (!inflater) {
        collect(chunk);
        return;
      }
      if (compressedBytes > limitBytes) {
        settle(tooLarge(' before decompression'));
        return;
      }
      if (!inflater.write(chunk)) {
        source.pause();
        inflater.once('drain', () => {
          if (!settled) source.resume();
        });
      }
    }

    function onSourceEnd() {
      sourceEnded = true;
      if (inflater) inflater.end();
      else settle();
    }

    function onSourceClose() {
      if (!sourceEnded) onSourceError();
    }

    function onSourceError() {
      settle(
        new RequestAbortedError('the sender closed the connection before the request body was complete'),
      );
    }

    if (inflater) {
      inflater.on('data', (chunk: Buffer) => {
        if (!settled) collect(chunk);
      });
      inflater.on('end', () => settle());
      inflater.on('error', (error: Error) => {
        settle(new KeyscopeError(ANALYZER_BAD_COMPRESSION, `gzip body cannot be inflated: ${error.message}`));
      });
    }
    source.on('data', onSourceData);
    source.on('end', onSourceEnd);
    source.on('error', onSourceError);
    source.on('aborted', onSourceError);
    source.on('close', onSourceClose);
  });
}

function ignore(): void {}
