import type { Attempt, ClientAttempt, ExtractedAttempts, KeylessSend } from './attempt.ts';

/** How much a `SendLinker` holds: in event time and in entries. */
export interface SendLinkerLimits {
  /**
   * How long an entry waits for its other side, in event time: it is dropped once the latest span
   * end the linker has seen is more than this past the entry's own end. Long enough for the two
   * sides to come in different exports, of different services, seconds or minutes apart.
   */
  readonly horizonMillis: number;
  /** Sends waiting for a key and keys waiting for a send, together; the oldest goes first. */
  readonly maxEntries: number;
}

export function defaultSendLinkerLimits(): SendLinkerLimits {
  return { horizonMillis: 5 * 60_000, maxEntries: 100_000 };
}

export interface SendLinkerCounts {
  /** Keyless sends given a key (a send delivered again is linked again, as its span would be). */
  linked: number;
  /** Entries dropped to stay within `maxEntries`, oldest first. */
  evicted: number;
  /** Entries dropped past `horizonMillis`, and sends and keys that came past it already. */
  expired: number;
  /** Entries held now. */
  entries: number;
}

/** One send's id: what is known of it so far. */
class Entry {
  constructor(
    readonly traceId: string,
    /** Span end, Unix ms: when the entry was last seen in event time. */
    readonly at: number,
    /** The keyless send, waiting for a server span that names it; null once a key is known. */
    public send: KeylessSend | null,
    /** The key of a server span naming this send as its parent; '' while only the send is known. */
    public key: string,
    public tenant: string,
  ) {}
}

/**
 * Gives keyless sends the key of their server spans. HTTP client instrumentation records the
 * request's headers, the idempotency key among them, only once a response arrives
 * (`@opentelemetry/instrumentation-http`), so the CLIENT span of a send that timed out carries no
 * key. The SERVER span it reached does, and names it as its parent: a keyless send (see
 * `KeylessSend`) whose span id is the parent span id of a keyed server attempt or arrival of the
 * same trace becomes a client attempt of that key and tenant, marked `keyFrom: 'child'`.
 *
 * The two sides come in any order, in one batch or in different ones (different services export
 * apart): whichever comes first waits for the other, at most `horizonMillis` of event time and
 * within `maxEntries` (oldest first), dropped ones counted. A send reaching two servers (a proxy
 * retrying it) is linked once, under the first key seen; a send that carries the key itself is a
 * client attempt already and is never linked. A send delivered again after its key is known is
 * linked again, like a redelivered span's attempt: the detector's attempt log refuses the copy by
 * (trace id, span id), so a batch whose transaction failed and is sent again loses no link.
 *
 * Entries are keyed by span id (random 64 bits) and checked against the trace id: a span id met
 * in another trace neither links nor replaces what is held. Memory is one entry per send or key
 * waiting (about 200 bytes with a waiting send), at most `maxEntries`.
 */
export class SendLinker {
  readonly #limits: SendLinkerLimits;
  /** By span id of the send, in order of insertion: the front is the oldest to evict or expire. */
  readonly #entries = new Map<string, Entry>();
  /** The latest span end seen, Unix ms. */
  #watermark = Number.NEGATIVE_INFINITY;
  readonly #counts = { linked: 0, evicted: 0, expired: 0 };

  constructor(limits: SendLinkerLimits = defaultSendLinkerLimits()) {
    if (!(limits.horizonMillis >= 0) || !Number.isInteger(limits.maxEntries) || limits.maxEntries < 0) {
      throw new RangeError(
        `SendLinker limits must be a horizonMillis >= 0 and an integer maxEntries >= 0, received ${limits.horizonMillis} and ${limits.maxEntries}`,
      );
    }
    this.#limits = limits;
  }

  /**
   * Reads a batch's attempts (for the keys server spans give their parents, and the sends that
   * carry their key) and its keyless sends; returns the client attempts linked now, from this
   * batch's sends or from earlier ones. Neither argument is changed or held (a waiting send is).
   */
  link(attempts: readonly Attempt[], sends: readonly KeylessSend[]): ClientAttempt[] {
    const linked: ClientAttempt[] = [];
    let watermark = this.#watermark;
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i]!;
      if (attempt.endUnixMillis > watermark) watermark = attempt.endUnixMillis;
    }
    for (let i = 0; i < sends.length; i++) {
      const send = sends[i]!;
      if (send.endUnixMillis > watermark) watermark = send.endUnixMillis;
    }
    this.#watermark = watermark;
    this.#expire();
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i]!;
      if ((attempt.kind === 'server' || attempt.kind === 'arrival') && attempt.parentSpanId !== '') {
        this.#keyed(attempt, linked);
      } else if (attempt.kind === 'client' && attempt.keyFrom === undefined) {
        // Carries its key: nothing to link, and a key its server spans left is not needed.
        const entry = this.#entries.get(attempt.spanId);
        if (entry !== undefined && entry.traceId === attempt.traceId) this.#entries.delete(attempt.spanId);
      }
    }
    for (let i = 0; i < sends.length; i++) this.#send(sends[i]!, linked);
    this.#evict();
    this.#counts.linked += linked.length;
    return linked;
  }

  /**
   * `link` on what `extractAttempts` returned: appends the client attempts linked now to
   * `extracted.attempts` (after the batch's own), and returns how many.
   */
  linkInto(extracted: ExtractedAttempts): number {
    const linked = this.link(extracted.attempts, extracted.keylessSends ?? []);
    for (let i = 0; i < linked.length; i++) extracted.attempts.push(linked[i]!);
    return linked.length;
  }

  counts(): SendLinkerCounts {
    return { ...this.#counts, entries: this.#entries.size };
  }

  /** A keyed server span: its parent is a send of its key. */
  #keyed(attempt: Attempt, linked: ClientAttempt[]): void {
    const entry = this.#live(attempt.parentSpanId);
    if (entry === undefined) {
      if (this.#stale(attempt.endUnixMillis)) return;
      this.#entries.set(
        attempt.parentSpanId,
        new Entry(attempt.traceId, attempt.endUnixMillis, null, attempt.key, attempt.tenant),
      );
      return;
    }
    if (entry.traceId !== attempt.traceId || entry.send === null) return;
    linked.push(linkedAttempt(entry.send, attempt.key, attempt.tenant));
    entry.send = null;
    entry.key = attempt.key;
    entry.tenant = attempt.tenant;
  }

  #send(send: KeylessSend, linked: ClientAttempt[]): void {
    const entry = this.#live(send.spanId);
    if (entry === undefined) {
      if (this.#stale(send.endUnixMillis)) return;
      this.#entries.set(send.spanId, new Entry(send.traceId, send.endUnixMillis, send, '', ''));
      return;
    }
    if (entry.traceId !== send.traceId || entry.send !== null) return;
    linked.push(linkedAttempt(send, entry.key, entry.tenant));
  }

  /** Whether a span ending at `at` is past the horizon already: it is not held (but counted). */
  #stale(at: number): boolean {
    if (at >= this.#watermark - this.#limits.horizonMillis) return false;
    this.#counts.expired++;
    return true;
  }

  /** The entry under `spanId`, unless it is past the horizon (then dropped and counted). */
  #live(spanId: string): Entry | undefined {
    const entry = this.#entries.get(spanId);
    if (entry === undefined || entry.at >= this.#watermark - this.#limits.horizonMillis) return entry;
    this.#entries.delete(spanId);
    this.#counts.expired++;
    return undefined;
  }

  /**
   * Drops entries past the horizon from the front (the oldest inserted). One that came late in
   * event time may wait behind a newer one; `#live` refuses it when it is looked up.
   */
  #expire(): void {
    const cutoff = this.#watermark - this.#limits.horizonMillis;
    for (const [spanId, entry] of this.#entries) {
      if (entry.at >= cutoff) break;
      this.#entries.delete(spanId);
      this.#counts.expired++;
    }
  }

  #evict(): void {
    let excess = this.#entries.size - this.#limits.maxEntries;
    if (excess <= 0) return;
    for (const spanId of this.#entries.keys()) {
      this.#entries.delete(spanId);
      this.#counts.evicted++;
      if (--excess === 0) break;
    }
  }
}

/** `send` as a client attempt of `key`, fields in the order extraction gives a client attempt's. */
function linkedAttempt(send: KeylessSend, key: string, tenant: string): ClientAttempt {
  return {
    kind: 'client',
    key,
    tenant,
    traceId: send.traceId,
    spanId: send.spanId,
    parentSpanId: send.parentSpanId,
    startUnixMillis: send.startUnixMillis,
    endUnixMillis: send.endUnixMillis,
    placement: send.placement,
    operation: send.operation,
    resendCount: send.resendCount,
    target: send.target,
    statusCode: send.statusCode,
    error: send.error,
    keyFrom: 'child',
  };
}
