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

/**
 * Call `i` answers after `latenciesMillis[i]` (the last one repeats): a first call at the tail of
 * the latency distribution, slower than the client's timeout, then normal ones.
 */
export function createCardNetwork(latenciesMillis: readonly number[]): CardNetwork {
  const charges: Charge[] = [];
  let calls = 0;
  return {
    charges,
    async charge(amount, card, node) {
      const latency = latenciesMillis[Math.min(calls++, latenciesMillis.length - 1)]!;
      await new Promise((resolve) => setTimeout(resolve, latency));
      const charge = { id: `ch_${charges.length + 1}`, amount, card, node };
      charges.push(charge);
      return charge;
    },
  };
}
