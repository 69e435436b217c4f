/** The side effect the gate protects: every call is money moved. */
export interface Charge {
  readonly id: string;
  readonly amount: number;
  readonly card: string;
  /** The payments node that charged. */
  readonly node: string;
}

export interface CardNetwork {
  charge(amount: number, card: string, node: string): Promise<Charge>;
  readonly charges: readonly Charge[];
}

/** The processor refused the call before charging anything. */
export class ProcessorUnavailableError extends Error {
  constructor() {
    super('card processor unavailable');
    this.name = 'ProcessorUnavailableError';
  }
}

/**
 * Call `i` answers after `latenciesMillis[i]` (the last one repeats): a first call at the tail of
 * the latency distribution, slower than the client's timeout, then normal ones. With
 * `unavailableFor`, the calls of that node fail with ProcessorUnavailableError, charging nothing.
 */
export function createCardNetwork(
  latenciesMillis: readonly number[],
  options: { unavailableFor?: string } = {},
): CardNetwork {
  const charges: Charge[] = [];
  let calls = 0;
  return {
    charges,
    async charge(amount, card, node) {
      if (node === options.unavailableFor) throw new ProcessorUnavailableError();
      const latency = latenciesMillis[Math.min(calls++, latenciesMillis.length - 1)]!;
      await new Promise((resolve) => setTimeout(resolve, latency));
      const charge = { id: `ch_${charges.length + 1}`, amount, card, node };
      charges.push(charge);
      return charge;
    },
  };
}
