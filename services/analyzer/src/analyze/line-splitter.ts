/** One line of a byte stream, without its `\n`. */
export interface Line {
  /** Empty when `oversized`. Valid until the next line is requested (it may view the chunk). */
  readonly bytes: Buffer;
  /** Where the line starts, counted in the (decompressed) stream. */
  readonly offsetBytes: number;
  /** 1-based. */
  readonly number: number;
  /** False only for a last line that the stream ended without a `\n`. */
  readonly terminated: boolean;
  /** Longer than the limit: its bytes were dropped, and the line was still read to its end. */
  readonly oversized: boolean;
  /** The line's length, counted even when oversized. */
  readonly lengthBytes: number;
}

const NEWLINE = 0x0a;

/**
 * Splits a stream of chunks into lines, holding at most one line (up to `maxLineBytes`) and one
 * chunk. A line inside one chunk is a view of it, not a copy. A line longer than the limit is
 * reported as `oversized` and skipped to its end, so a reader may go on with the next one.
 * Errors from `chunks` propagate after the complete lines before them were yielded; `position()`
 * then says how far the stream got.
 */
export class LineSplitter {
  #consumedBytes = 0;
  #lineStart = 0;
  #lineNumber = 1;

  constructor(private readonly maxLineBytes: number) {}

  /** Where the line being read starts, and its number: where a stream error happened. */
  position(): { offsetBytes: number; line: number; endBytes: number } {
    return { offsetBytes: this.#lineStart, line: this.#lineNumber, endBytes: this.#consumedBytes };
  }

  async *lines(chunks: AsyncIterable<Buffer>): AsyncGenerator<Line> {
    let parts: Buffer[] = [];
    let heldBytes = 0;
    let lengthBytes = 0;
    let oversized = false;
    const line = (terminated: boolean): Line => ({
      bytes: oversized ? Buffer.alloc(0) : parts.length === 1 ? parts[0]! : Buffer.concat(parts, heldBytes),
      offsetBytes: this.#lineStart,
      number: this.#lineNumber,
      terminated,
      oversized,
      lengthBytes,
    });
    for await (const chunk of chunks) {
      let from = 0;
      while (from < chunk.length) {
        const newline = chunk.indexOf(NEWLINE, from);
        const end = newline === -1 ? chunk.length : newline;
        lengthBytes += end - from;
        if (!oversized) {
          if (lengthBytes > this.maxLineBytes) {
            oversized = true;
            parts = [];
            heldBytes = 0;
          } else if (end > from) {
            parts.push(chunk.subarray(from, end));
            heldBytes += end - from;
          }
        }
        if (newline === -1) break;
        this.#consumedBytes += newline + 1 - from;
        yield line(true);
        this.#lineStart = this.#consumedBytes;
        this.#lineNumber++;
        parts = [];
        heldBytes = 0;
        lengthBytes = 0;
        oversized = false;
        from = newline + 1;
      }
      this.#consumedBytes += chunk.length - from;
    }
    if (lengthBytes > 0) yield line(false);
  }
}
