import { isIPv6 } from 'node:net';

/**
 * Why a request's token was refused: `missing` (no `Authorization: Bearer <token>` header),
 * `invalid` (a token keyscope does not know), `throttled` (refused unchecked: its client address
 * had spent its failure budget). The labels of `keyscope_auth_failures_total`.
 */
export type AuthFailureReason = 'missing' | 'invalid' | 'throttled';
export const AUTH_FAILURE_REASONS: readonly AuthFailureReason[] = ['missing', 'invalid', 'throttled'];

/**
 * How many unknown tokens a client address may present: `burst` at once, then one more every
 * `refillMillis`; past that it gets 429 until it has budget again. The table holds at most
 * `maxAddresses` addresses, the least recently seen evicted first.
 */
export interface AuthFailureBudget {
  burst: number;
  refillMillis: number;
  maxAddresses: number;
}

export const AUTH_FAILURE_BUDGET: Readonly<AuthFailureBudget> = Object.freeze({
  burst: 20,
  refillMillis: 1_000,
  maxAddresses: 10_000,
});

interface AddressEntry {
  /** Unknown tokens the address may still present now (fractional while refilling). */
  budget: number;
  updatedUnixMillis: number;
  /** Tokens (by index) that authenticated from this address: they are never throttled here. */
  admitted: Set<number>;
}

/**
 * Failed token attempts: counted by reason for /metrics, and spent per client address from a
 * token bucket, so guessing tokens from one address runs at `1000 / refillMillis` guesses a second
 * once its burst is spent. A token that has authenticated from an address is still accepted from
 * it while the address is throttled, so a client behind the same NAT or proxy as a guesser keeps
 * working. Missing tokens are counted but spend no budget: they guess nothing. IPv6 clients are
 * keyed by their /64, which one host usually holds whole.
 */
export class AuthFailures {
  private readonly entries = new Map<string, AddressEntry>();
  private readonly counts: Record<AuthFailureReason, number> = { missing: 0, invalid: 0, throttled: 0 };
  private readonly budget: Readonly<AuthFailureBudget>;
  private readonly now: () => number;

  constructor(options: { budget?: Readonly<AuthFailureBudget>; now?: () => number } = {}) {
    this.budget = options.budget ?? AUTH_FAILURE_BUDGET;
    this.now = options.now ?? Date.now;
  }

  /**
   * Milliseconds until `remoteAddress` may present a token other than `tokenIndex` (the index of
   * the token it presented among the configured ones, undefined when unknown); 0 when it may now.
   */
  waitMillis(remoteAddress: string | undefined, tokenIndex: number | undefined): number {
    const entry = this.entry(clientOf(remoteAddress), false);
    if (entry === undefined || entry.budget >= 1) return 0;
    if (tokenIndex !== undefined && entry.admitted.has(tokenIndex)) return 0;
    return Math.ceil((1 - entry.budget) * this.budget.refillMillis);
  }

  /** The token at `tokenIndex` authenticated from `remoteAddress`. */
  admitted(remoteAddress: string | undefined, tokenIndex: number): void {
    this.entry(clientOf(remoteAddress), true)!.admitted.add(tokenIndex);
  }

  /** Counts a refusal; an unknown token spends one of its address's budget. */
  failed(remoteAddress: string | undefined, reason: AuthFailureReason): void {
    this.counts[reason]++;
    if (reason === 'invalid') this.entry(clientOf(remoteAddress), true)!.budget -= 1;
  }

  /** Refusals since creation, by reason. */
  snapshot(): Readonly<Record<AuthFailureReason, number>> {
    return { ...this.counts };
  }

  /** Client addresses held (at most `maxAddresses`). */
  get addresses(): number {
    return this.entries.size;
  }

  /** The address's entry, refilled to now and moved to the newest end; created when `create`. */
  private entry(client: string, create: boolean): AddressEntry | undefined {
    const now = this.now();
    let entry = this.entries.get(client);
    if (entry === undefined) {
      if (!create) return undefined;
      entry = { budget: this.budget.burst, updatedUnixMillis: now, admitted: new Set() };
      if (this.entries.size >= this.budget.maxAddresses) {
        this.entries.delete(this.entries.keys().next().value!);
      }
    } else {
      const refill = Math.max(0, now - entry.updatedUnixMillis) / this.budget.refillMillis;
      entry.budget = Math.min(this.budget.burst, entry.budget + refill);
      entry.updatedUnixMillis = now;
      this.entries.delete(client);
    }
    this.entries.set(client, entry);
    return entry;
  }
}

/** The key a client is budgeted by: its IPv4 address (mapped ones included), or its IPv6 /64. */
export function clientOf(remoteAddress: string | undefined): string {
  if (remoteAddress === undefined) return 'unknown';
  const address = remoteAddress.split('%', 1)[0]!.toLowerCase();
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice('::ffff:'.length);
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
