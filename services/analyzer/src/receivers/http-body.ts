import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { KeyscopeError } from '@keyscope/errors';
import { ANALYZER_BAD_COMPRESSION, ANALYZER_BODY_TOO_LARGE } from '../errors.ts';

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

/**
 * Reads a request body of at most `limitBytes`, counted both as it arrives and after
 * decompression. Inflating is streamed and stops as soon as the output passes the limit, so a
 * small gzip body that would inflate to gigabytes never allocates more than the limit (plus one
 * zlib chunk).
 *
 * On refusal the rest of the body is discarded, not destroyed: destroying the request would reset
 * the socket before the 413 reaches the sender. The caller should answer with `Connection: close`.
 *
 * Rejects with KS_ANALYZER_BODY_TOO_LARGE, KS_ANALYZER_BAD_COMPRESSION or RequestAbortedError.
 */
export function readRequestBody(
  source: Readable,
  coding: ContentCoding,
  limitBytes: number,
): Promise<RequestBody> {
  return new Promise((resolve, reject) => {
    const inflater = coding === 'gzip' ? createGunzip() : undefined;
    const chunks: Buffer[] = [];
    let compressedBytes = 0;
    let size = 0;
    let settled = false;

    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      source.off('data', onSourceData);
      source.off('end', onSourceEnd);
      source.off('error', onSourceError);
      source.off('aborted', onSourceError);
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
      if (inflater) inflater.end();
      else settle();
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
  });
}

function ignore(): void {}
