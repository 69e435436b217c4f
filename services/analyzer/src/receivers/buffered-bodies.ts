/**
 * The bound on OTLP/HTTP bodies (OTLP/gRPC messages) still arriving; each receiver has its own. A
 * request takes an admission slot only once its body is complete (admission.ts), so that a sender
 * that is slow to send its body holds no slot; the bodies read until then are bounded here
 * instead, in bytes as they are buffered, so that a call that has sent one byte of a body holds
 * one byte of this bound, not its declared Content-Length (gRPC length prefix).
 */

export interface BodyReservation {
  /**
   * Counts `bytes` more of this body; false when they do not fit. A body larger than the bound on
   * its own is let through when no other body is buffered, since refusing it would make the
   * sender retry it forever.
   */
  add(bytes: number): boolean;
  /** Gives back what this body counted. Safe to call more than once. */
  release(): void;
}

export class BufferedBodies {
  readonly #maxBytes: number;
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** A reservation for one body, holding nothing yet. */
  open(): BodyReservation {
    let mine = 0;
    let released = false;
    return {
      add: (bytes) => {
        if (released) throw new Error('add after release');
        if (this.#bytes + bytes > this.#maxBytes && this.#bytes > mine) return false;
        this.#bytes += bytes;
        mine += bytes;
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        this.#bytes -= mine;
      },
    };
  }

  heldBytes(): number {
    return this.#bytes;
  }
}
