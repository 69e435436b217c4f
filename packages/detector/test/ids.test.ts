import { describe, expect, it } from 'vitest';
import { stableId } from '../src/ids.ts';

describe('stable ids', () => {
  // Ids are stored (findings, incidents, routing events) and sent (PagerDuty dedup keys): a change
  // in how they are derived would turn every known finding into a new one after an upgrade.
  it('are the ids earlier versions derived for the same parts', () => {
    expect(stableId('f', ['cross_store_duplicate', '3f2b8c1e-9a4d-4e7b-b6c2-0d9e8f7a6b5c'])).toBe(
      'f_c53d1ee3fe54a9df701fb88f',
    );
    expect(stableId('inc', ['payments', 'POST /payments', 'cross_store_duplicate', 're_x'])).toBe(
      'inc_353ce9935d3ebc00cd83dce3',
    );
    expect(stableId('re', ['node_down', 'payments', 'payments-a-1', 1767225600000])).toBe(
      're_22b44961e6cb699b0f466c8e',
    );
    // Non-ASCII parts and a lone surrogate hash as their UTF-8 (U+FFFD for the surrogate).
    expect(stableId('f', ['x', 'ключ-é✓\ud800'])).toBe('f_7af66f860069b271dc196555');
  });

  it('tell parts apart from their concatenation', () => {
    expect(stableId('f', ['ab', 'c'])).not.toBe(stableId('f', ['a', 'bc']));
    expect(stableId('f', ['a', 'b'])).not.toBe(stableId('g', ['a', 'b']));
  });
});
