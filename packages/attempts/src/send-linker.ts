import type { Attempt, ClientAttempt, ExtractedAttempts, KeylessSend } from './attempt.ts';
import { createClientAttempt } from './attempt-schema.ts';

/** How much a `SendLinker` holds: in event time and in entries. */
export interface SendLinkerLimits {
  /**
   * How long an entry waits for its other side, in event time: it is dropped once the latest span
   * end the linker has seen is more than this past the entry's own end. Long enough for the two
   * sides to come in different exports, of different services, seconds or minutes apart.
   */
  readonly horizonMillis: number;
  /** Keyless sends waiting for a server span; the oldest goes first. Failed sends only: few. */
  readonly maxSends: number;
  /**
   * Keys of server spans waiting for their keyless send; the oldest goes first. A keyed request
   * whose send is not in its server span's batch leaves one until the send turns up with its own
   * key, so these can be many.
   */
  readonly maxKeys: number;
}

export function defaultSendLinkerLimits(): SendLinkerLimits {
  return { horizonMillis: 5 * 60_000, maxSends: 10_000, maxKeys: 100_000 };
}

export interface SendLinkerCounts {
  /** Keyless sends given a key (a send delivered again is linked again, as its span would be). */
  linked: number;
  /** Entries dropped to stay within `maxSends` and `maxKeys`, oldest first. */
  evicted: number;
  /** Entries dropped past `horizonMillis`, and sends and keys that came past it already. */
  expired: number;
  /** Sends waiting now. */
  sends: number;
  /** Keys waiting now. */
  keys: number;
}

/** What a server span left for the send it names as its parent. */
class KeyEntry {
  constructor(
    readonly traceId: string,
    /** The server span's end, Unix ms. */
    readonly at: number,
    readonly key: string,
    readonly tenant: string,
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
 * apart): whichever comes first waits for the other, at most `horizonMillis` of event time, and
 * within `maxSends` and `maxKeys` (apart, so the many keys never push out the few sends; oldest
 * first); what is dropped is counted. A send reaching two servers (a proxy retrying it) is linked
 * once, under the first key seen; a send that carries the key itself is a client attempt already,
 * is never linked, and takes the key its server spans left with it. A send delivered again after
 * its key is known is linked again, like a redelivered span's attempt: the detector's attempt log
 * refuses the copy by (trace id, span id), so a batch whose transaction failed and is sent again
 * loses no link.
 *
 * Entries are keyed by span id (random 64 bits) and checked against the trace id: a span id met
 * in another trace neither links nor replaces what is held. Memory: about 110 bytes a key (its
 * strings are the attempt's), 11 MB at the default `maxKeys`, and the few sends' objects.
 */
export class SendLinker {
  readonly #limits: SendLinkerLimits;
  /** By span id, in order of insertion: the front is the oldest to evict or expire. */
  readonly #sends = new Map<string, KeylessSend>();
  /** By the span id of the send, in order of insertion. */
  readonly #keys = new Map<string, KeyEntry>();
  /** The latest span end seen, Unix ms. */
  #watermark = Number.NEGATIVE_INFINITY;
  readonly #counts = { linked: 0, evicted: 0, expired: 0 };

  constructor(limits: SendLinkerLimits = defaultSendLinkerLimits()) {
    const counts = [limits.maxSends, limits.maxKeys];
    if (!(limits.horizonMillis >= 0) || !counts.every((n) => Number.isInteger(n) && n >= 0)) {
      throw new RangeError(
        `SendLinker limits must be a horizonMillis >= 0 and integer maxSends and maxKeys >= 0, received ${limits.horizonMillis}, ${limits.maxSends} and ${limits.maxKeys}`,
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
      const end = attempts[i]!.endUnixMillis;
      if (end > watermark) watermark = end;
    }
    for (let i = 0; i < sends.length; i++) {
      const end = sends[i]!.endUnixMillis;
      if (end > watermark) watermark = end;
    }
    this.#watermark = watermark;
    const cutoff = watermark - this.#limits.horizonMillis;
    this.#expire(this.#sends, cutoff, sendEnd);
    this.#expire(this.#keys, cutoff, keyEnd);
    // The batch's keyed server spans by span id, trace id: a span under one of them (a decision on
    // its request's SERVER span, mostly exported with it) names a server span, not a send, and
    // leaves no key to wait. And its sends that carry their key: a server span under one of them
    // has its send in hand (most do: a trace's spans are mostly exported together), so its key
    // need not wait for it, unless a keyless send of that id is waiting.
    const serverSpans = new Map<string, string>();
    const keyedSends = new Map<string, string>();
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i]!;
      if (attempt.kind === 'server' || attempt.kind === 'arrival')
        serverSpans.set(attempt.spanId, attempt.traceId);
      else if (attempt.kind === 'client' && attempt.keyFrom === undefined)
        keyedSends.set(attempt.spanId, attempt.traceId);
    }
    for (let i = 0; i < attempts.length; i++) {
      const attempt = attempts[i]!;
      if (attempt.kind === 'server' || attempt.kind === 'arrival') {
        // A key left by a span under this one, exported before it, waits for no send either.
        const under = this.#keys.size === 0 ? undefined : this.#keys.get(attempt.spanId);
        if (under !== undefined && under.traceId === attempt.traceId) this.#keys.delete(attempt.spanId);
        const parent = attempt.parentSpanId;
        if (
          parent !== '' &&
          serverSpans.get(parent) !== attempt.traceId &&
          (keyedSends.get(parent) !== attempt.traceId || this.#sends.has(parent))
        )
          this.#keyed(attempt, cutoff, linked);
      } else if (attempt.kind === 'client' && attempt.keyFrom === undefined) {
        // Carries its key: nothing to link, and no key of its server spans need wait for it.
        const entry = this.#keys.get(attempt.spanId);
        if (entry !== undefined && entry.traceId === attempt.traceId) this.#keys.delete(attempt.spanId);
        // Sends wait rarely: most batches find none to look up.
        const waiting = this.#sends.size === 0 ? undefined : this.#sends.get(attempt.spanId);
        if (waiting !== undefined && waiting.traceId === attempt.traceId) this.#sends.delete(attempt.spanId);
      }
    }
    for (let i = 0; i < sends.length; i++) this.#send(sends[i]!, cutoff, linked);
    this.#evict(this.#sends, this.#limits.maxSends);
    this.#evict(this.#keys, this.#limits.maxKeys);
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
    return { ...this.#counts, sends: this.#sends.size, keys: this.#keys.size };
  }

  /** A keyed server span: its parent is a send of its key. */
  #keyed(attempt: Attempt, cutoff: number, linked: ClientAttempt[]): void {
    const id = attempt.parentSpanId;
    if (this.#live(this.#keys, id, cutoff, keyEnd) !== undefined) return;
    const waiting = this.#sends.size === 0 ? undefined : this.#live(this.#sends, id, cutoff, sendEnd);
    if (waiting !== undefined) {
      if (waiting.traceId !== attempt.traceId) return;
      linked.push(linkedAttempt(waiting, attempt.key, attempt.tenant));
      this.#sends.delete(id);
    } else if (this.#stale(attempt.endUnixMillis, cutoff)) return;
    // Kept after a link too: the send delivered again is linked again, and a second server span
    // of the send (a proxy's retry) finds its key known.
    this.#keys.set(id, new KeyEntry(attempt.traceId, attempt.endUnixMillis, attempt.key, attempt.tenant));
  }

  #send(send: KeylessSend, cutoff: number, linked: ClientAttempt[]): void {
    const id = send.spanId;
    const entry = this.#live(this.#keys, id, cutoff, keyEnd);
    if (entry !== undefined) {
      if (entry.traceId === send.traceId) linked.push(linkedAttempt(send, entry.key, entry.tenant));
      return;
    }
    if (this.#live(this.#sends, id, cutoff, sendEnd) !== undefined) return;
    if (this.#stale(send.endUnixMillis, cutoff)) return;
    this.#sends.set(id, send);
  }

  /** Whether a span ending at `at` came past the horizon: it is not held, but counted. */
  #stale(at: number, cutoff: number): boolean {
    if (at >= cutoff) return false;
    this.#counts.expired++;
    return true;
  }

  /**
   * The entry under `id`, unless it is past the horizon: one that came late in event time may
   * wait behind a newer one (see `#expire`), and is dropped (and counted) when looked up.
   */
  #live<T>(entries: Map<string, T>, id: string, cutoff: number, endOf: (entry: T) => number): T | undefined {
    const entry = entries.get(id);
    if (entry === undefined || endOf(entry) >= cutoff) return entry;
    entries.delete(id);
    this.#counts.expired++;
    return undefined;
  }

  /**
   * Drops entries past the horizon from the front (the oldest inserted), up to the first within it.
   */
  #expire<T>(entries: Map<string, T>, cutoff: number, endOf: (entry: T) => number): void {
    for (const [id, entry] of entries) {
      if (endOf(entry) >= cutoff) break;
      entries.delete(id);
      this.#counts.expired++;
    }
  }

  #evict(entries: Map<string, unknown>, max: number): void {
    let excess = entries.size - max;
    if (excess <= 0) return;
    for (const id of entries.keys()) {
      entries.delete(id);
      this.#counts.evicted++;
      if (--excess === 0) break;
    }
  }
}

const sendEnd = (send: KeylessSend) => send.endUnixMillis;
const keyEnd = (entry: KeyEntry) => entry.at;

/** `send` as a client attempt of `key`: its fields, the key and tenant, and the mark. */
function linkedAttempt(send: KeylessSend, key: string, tenant: string): ClientAttempt {
  return createClientAttempt({ ...send, key, tenant, keyFrom: 'child' });
}
