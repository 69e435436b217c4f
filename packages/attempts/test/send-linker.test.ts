import { describe, expect, it } from 'vitest';
// By path: testkit depends on this package, so it is not one of this package's dependencies.
import { server } from '../../testkit/src/attempt-builders.ts';
import type { Arrival, Attempt, ClientAttempt, KeylessSend, ServerAttempt } from '../src/attempt.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping } from '../src/mapping.ts';
import { SendLinker } from '../src/send-linker.ts';
import { clientSpan, hexId, serverSpan, TEST_EPOCH_UNIX_MILLIS } from '../src/testing.ts';

const placement = { service: 'checkout', node: 'checkout-1', cluster: '', region: '', zone: '' };
const atPayments = { ...placement, service: 'payments', node: 'payments-a-1' };

/** A send that timed out after 2 s, `at` seconds after the test epoch, in trace `trace`. */
function send(id: number, options: { trace?: number; at?: number } = {}): KeylessSend {
  const start = TEST_EPOCH_UNIX_MILLIS + (options.at ?? 0) * 1000;
  return {
    kind: 'client',
    traceId: hexId(options.trace ?? id, 32),
    spanId: hexId(id, 16),
    parentSpanId: hexId(0xf000 + id, 16),
    startUnixMillis: start,
    endUnixMillis: start + 2000,
    placement,
    operation: 'POST',
    resendCount: 0,
    target: 'payments:443',
    statusCode: 0,
    error: 'timeout',
  };
}

/** A keyed arrival whose parent is send `id` (its server span: ids count from 0x100). */
function landing(
  id: number,
  key: string,
  options: { trace?: number; at?: number; n?: number } = {},
): Arrival {
  const start = TEST_EPOCH_UNIX_MILLIS + (options.at ?? 0) * 1000 + 5;
  return {
    kind: 'arrival',
    key,
    tenant: 't1',
    traceId: hexId(options.trace ?? id, 32),
    spanId: hexId(0x100 * (options.n ?? 1) + id, 16),
    parentSpanId: hexId(id, 16),
    startUnixMillis: start,
    endUnixMillis: start + 2400,
    placement: atPayments,
    operation: '/payments',
    statusCode: 201,
    failed: false,
    effect: '',
    released: false,
    businessId: '',
    method: '',
  };
}

/** A keyed decision on the server span's INTERNAL child: its parent is a server span, not a send. */
function decision(of: Arrival): ServerAttempt {
  return {
    ...server({ outcome: 'miss', store: 'payments-a', scope: 'node' }),
    ...of,
    kind: 'server',
    spanId: hexId(Number.parseInt(of.spanId, 16) + 0x10000, 16),
    parentSpanId: of.spanId,
  };
}

const linkedOf = (sent: KeylessSend, key: string): ClientAttempt => ({
  ...sent,
  key,
  tenant: 't1',
  keyFrom: 'child',
});

/** Sorted (trace/span id, key) pairs of linked attempts, to compare sets. */
const pairs = (attempts: readonly ClientAttempt[]) =>
  attempts.map((a) => `${a.traceId}/${a.spanId}=${a.key}`).sort();

/** A seeded shuffle (mulberry32), so a failure reproduces. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('the send linker', () => {
  it('gives a keyless send the key and tenant of the server span naming it, the send first', () => {
    const linker = new SendLinker();
    expect(linker.link([], [send(1)])).toEqual([]);
    expect(linker.link([landing(1, 'k1')], [])).toEqual([linkedOf(send(1), 'k1')]);
    expect(linker.counts()).toMatchObject({ linked: 1, evicted: 0, expired: 0 });
  });

  it('gives it the key the same way with the server span first, and in one batch', () => {
    const serverFirst = new SendLinker();
    expect(serverFirst.link([landing(1, 'k1')], [])).toEqual([]);
    expect(serverFirst.link([], [send(1)])).toEqual([linkedOf(send(1), 'k1')]);
    const together = new SendLinker();
    expect(together.link([landing(1, 'k1')], [send(1)])).toEqual([linkedOf(send(1), 'k1')]);
  });

  it('links every send to its key once, whatever order sends and server spans come in', () => {
    // 200 sends, each reaching one or two servers (a proxy retry), with decisions on child spans.
    const sends = Array.from({ length: 200 }, (_, i) => send(i + 1, { at: i / 10 }));
    const attempts: Attempt[] = [];
    for (const sent of sends) {
      const id = Number.parseInt(sent.spanId, 16);
      const first = landing(id, `k${id}`, { at: id / 10 });
      attempts.push(first, decision(first));
      if (id % 3 === 0) attempts.push(landing(id, `k${id}`, { at: id / 10 + 1, n: 2 }));
    }
    const expected = pairs(sends.map((sent) => linkedOf(sent, `k${Number.parseInt(sent.spanId, 16)}`)));
    type Item = { attempt: Attempt } | { send: KeylessSend };
    const items: Item[] = [...attempts.map((attempt) => ({ attempt })), ...sends.map((s) => ({ send: s }))];
    for (const seed of [1, 2, 3]) {
      const linker = new SendLinker();
      const linked: ClientAttempt[] = [];
      const order = shuffled(items, seed);
      // Batches of 1 to 7 items, as payloads of several services come.
      for (let at = 0, size = 1; at < order.length; at += size, size = (size % 7) + 1) {
        const batch = order.slice(at, at + size);
        linked.push(
          ...linker.link(
            batch.flatMap((item) => ('attempt' in item ? [item.attempt] : [])),
            batch.flatMap((item) => ('send' in item ? [item.send] : [])),
          ),
        );
      }
      expect(pairs(linked)).toEqual(expected);
      expect(linker.counts().linked).toBe(200);
    }
  });

  it('links a send reaching two servers once, under the first key seen', () => {
    const linker = new SendLinker();
    const linked = [
      ...linker.link([landing(1, 'k1')], []),
      ...linker.link([landing(1, 'k1', { n: 2 })], [send(1)]),
      ...linker.link([landing(1, 'k1', { n: 3 })], []),
    ];
    expect(linked).toEqual([linkedOf(send(1), 'k1')]);
  });

  it('never links a send that carries its key, nor holds its server span’s key after it', () => {
    const linker = new SendLinker();
    const keyed: ClientAttempt = { ...send(1), key: 'k1', tenant: 't1', statusCode: 201, error: '' };
    expect(linker.link([landing(1, 'k1'), keyed], [])).toEqual([]);
    expect(linker.counts()).toMatchObject({ sends: 0, keys: 0 });
  });

  it('holds no key for a server span whose send carries its key in the same batch, the send first', () => {
    const linker = new SendLinker();
    const keyed: ClientAttempt = { ...send(1), key: 'k1', tenant: 't1', statusCode: 201, error: '' };
    expect(linker.link([keyed, landing(1, 'k1')], [])).toEqual([]);
    expect(linker.counts()).toMatchObject({ sends: 0, keys: 0 });
    // A keyless send of that id already waiting is still linked by the server span naming it.
    const waiting = new SendLinker();
    waiting.link([], [send(2)]);
    const keyedToo: ClientAttempt = { ...send(2), key: 'k2', tenant: 't1', statusCode: 201, error: '' };
    expect(pairs(waiting.link([landing(2, 'k2'), keyedToo], []))).toEqual(pairs([linkedOf(send(2), 'k2')]));
  });

  it('holds no key for a decision whose parent is its request’s server span, in either order', () => {
    const together = new SendLinker();
    const arrival = landing(1, 'k1');
    together.link([decision(arrival), arrival], []);
    expect(together.counts().keys).toBe(1);
    const apart = new SendLinker();
    apart.link([decision(arrival)], []);
    apart.link([arrival], []);
    expect(apart.counts().keys).toBe(1);
    // What is held is the server span's: its send still links.
    expect(pairs(apart.link([], [send(1)]))).toEqual(pairs([linkedOf(send(1), 'k1')]));
  });

  it('does not take a key from a server span of another trace with the same span id', () => {
    const linker = new SendLinker();
    expect(linker.link([landing(1, 'k1', { trace: 9 })], [send(1)])).toEqual([]);
    const other = new SendLinker();
    expect(other.link([], [send(1, { trace: 9 })])).toEqual([]);
    expect(other.link([landing(1, 'k1')], [send(1)])).toEqual([]);
    expect(other.counts().linked).toBe(0);
  });

  it('links a send delivered again once more, for the attempt log to drop', () => {
    const linker = new SendLinker();
    linker.link([landing(1, 'k1')], [send(1)]);
    expect(linker.link([], [send(1)])).toEqual([linkedOf(send(1), 'k1')]);
    // Waiting, a send delivered again is held once.
    expect(linker.link([], [send(2), send(2)])).toEqual([]);
    expect(linker.link([landing(2, 'k2')], [])).toEqual([linkedOf(send(2), 'k2')]);
  });

  it('holds at most maxSends sends, dropping the oldest and counting them', () => {
    const linker = new SendLinker({ horizonMillis: 60_000, maxSends: 2, maxKeys: 10 });
    linker.link([], [send(1)]);
    linker.link([], [send(2), send(3)]);
    expect(linker.counts()).toMatchObject({ evicted: 1, sends: 2 });
    // The oldest went: its server span finds nothing to link, and leaves its key.
    expect(linker.link([landing(1, 'k1')], [])).toEqual([]);
    expect(linker.counts()).toMatchObject({ evicted: 1, sends: 2, keys: 1 });
    expect(linker.link([landing(3, 'k3')], [])).toEqual([linkedOf(send(3), 'k3')]);
  });

  it('holds at most maxKeys keys apart from the sends, so many keys never push a send out', () => {
    const linker = new SendLinker({ horizonMillis: 60_000, maxSends: 2, maxKeys: 3 });
    linker.link([], [send(1)]);
    const keys = Array.from({ length: 50 }, (_, i) => landing(100 + i, `k${100 + i}`));
    expect(linker.link(keys, [])).toEqual([]);
    expect(linker.counts()).toMatchObject({ evicted: 47, sends: 1, keys: 3 });
    // The oldest keys went; the newest are kept, and the waiting send still links.
    expect(linker.link([], [send(100), send(149)])).toEqual([linkedOf(send(149), 'k149')]);
    expect(linker.link([landing(1, 'k1')], [])).toEqual([linkedOf(send(1), 'k1')]);
  });

  it('drops what waited past its horizon of event time, and counts it', () => {
    const linker = new SendLinker({ horizonMillis: 60_000, maxSends: 100, maxKeys: 100 });
    linker.link([], [send(1, { at: 0 }), send(2, { at: 50 })]);
    // Spans ending 70 s after the epoch: the first send (ended at 2 s) is past the horizon.
    expect(linker.link([landing(9, 'k9', { at: 68 })], [])).toEqual([]);
    expect(linker.counts()).toMatchObject({ expired: 1, sends: 1, keys: 1 });
    // A server span that came past the horizon is not held either.
    expect(linker.link([landing(1, 'k1', { at: 1 })], [])).toEqual([]);
    expect(linker.counts()).toMatchObject({ expired: 2, sends: 1, keys: 1 });
    expect(linker.link([landing(2, 'k2', { at: 50 })], [])).toEqual([linkedOf(send(2, { at: 50 }), 'k2')]);
  });

  it('refuses an entry that came late and waited past the horizon behind a newer one', () => {
    const linker = new SendLinker({ horizonMillis: 60_000, maxSends: 100, maxKeys: 100 });
    linker.link([], [send(2, { at: 50 })]);
    linker.link([], [send(1, { at: 0 })]);
    linker.link([landing(9, 'k9', { at: 68 })], []);
    expect(linker.counts()).toMatchObject({ expired: 0, sends: 2, keys: 1 });
    // A long request: its server span ends within the horizon, the send it names long before.
    expect(linker.link([landing(1, 'k1', { at: 66 })], [])).toEqual([]);
    expect(linker.counts().expired).toBe(1);
  });

  it('refuses limits that are not a horizon and a count', () => {
    expect(() => new SendLinker({ horizonMillis: -1, maxSends: 10, maxKeys: 10 })).toThrow(RangeError);
    expect(() => new SendLinker({ horizonMillis: Number.NaN, maxSends: 10, maxKeys: 10 })).toThrow(
      RangeError,
    );
    expect(() => new SendLinker({ horizonMillis: 1000, maxSends: 1.5, maxKeys: 10 })).toThrow(RangeError);
    expect(() => new SendLinker({ horizonMillis: 1000, maxSends: 10, maxKeys: -1 })).toThrow(RangeError);
  });

  it('appends what it links to what extraction gave, from the spans themselves', () => {
    const mapping = defaultMapping();
    const timedOut = clientSpan({
      id: 0xc1,
      error: true,
      durationMillis: 2000,
      attributes: { 'server.address': 'payments', 'error.type': 'timeout' },
    });
    const arrived = serverSpan({ key: 'k1', tenant: 't1', parentSpanId: timedOut.spanId, statusCode: 201 });
    const linker = new SendLinker();
    const first = extractAttempts([timedOut], mapping);
    expect(linker.linkInto(first)).toBe(0);
    const second = extractAttempts([arrived], mapping);
    expect(linker.linkInto(second)).toBe(1);
    expect(second.attempts.map((a) => a.kind)).toEqual(['arrival', 'client']);
    expect(second.attempts[1]).toMatchObject({
      key: 'k1',
      tenant: 't1',
      spanId: timedOut.spanId,
      target: 'payments',
      statusCode: 0,
      error: 'timeout',
      endUnixMillis: timedOut.endTimeUnixMillis,
      keyFrom: 'child',
    });
  });
});
