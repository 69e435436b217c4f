/**
 * The name of a dedup tier: its service and its endpoint (or operation), apart by a NUL, which
 * neither holds. The scope report's rows, a key's compact state and the findings ledger all key
 * tiers by it; it sits below rules/ and coverage/ so that both import it from here.
 */
export function tierName(service: string, operation: string): string {
  return `${service}\u0000${operation}`;
}
