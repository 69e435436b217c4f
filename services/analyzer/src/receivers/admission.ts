/**
 * The bound on what the receivers hold for the pipeline at once, shared by OTLP/HTTP and OTLP/gRPC
 * because both feed one consumer. A request takes a slot once its body has arrived (so at most
 * `maxInFlightRequests` complete bodies are held, and a sender slow to send its body holds none:
 * bodies and gRPC messages still arriving are bounded in bytes in buffered-bodies.ts) and, once
 * decoded, reserves its spans; both are released when the consumer has answered. Nothing waits
 * for a slot: a request that finds the receivers full is refused at once with a retryable answer
 * (503 / UNAVAILABLE), so memory stays bounded however fast senders push.
 */

export interface AdmissionLimits {
  readonly maxInFlightRequests: number;
  readonly maxInFlightSpans: number;
}

export interface AdmissionSlot {
  /**
   * Reserves `count` spans for this request; false when they do not fit. A payload larger than
   * `maxInFlightSpans` on its own is admitted when nothing else is in flight, since refusing it
   * would make the sender retry it forever.
   */
  reserveSpans(count: number): boolean;
  /** Gives back the slot and its spans. Safe to call more than once. */
  release(): void;
}

export class Admission {
  readonly #limits: AdmissionLimits;
  #requests = 0;
  #spans = 0;

  constructor(limits: AdmissionLimits) {
    this.#limits = limits;
  }

  /** A slot for one request, or undefined when `maxInFlightRequests` are already in flight. */
  tryAdmit(): AdmissionSlot | undefined {
    if (this.#requests >= this.#limits.maxInFlightRequests) return undefined;
    this.#requests += 1;
    let reserved = 0;
    let released = false;
    return {
      reserveSpans: (count) => {
        if (released) throw new Error('reserveSpans after release');
        const fits = this.#spans + count <= this.#limits.maxInFlightSpans;
        if (!fits && this.#spans > 0) return false;
        this.#spans += count;
        reserved += count;
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        this.#requests -= 1;
        this.#spans -= reserved;
      },
    };
  }

  inFlight(): { requests: number; spans: number } {
    return { requests: this.#requests, spans: this.#spans };
  }
}
