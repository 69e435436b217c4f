import { describe, expect, it } from 'vitest';
import { displayWidth, padToWidth, terminalSafe, truncateToWidth } from '../../src/analyze/display-width.ts';

describe('display width', () => {
  it('counts ASCII as one column, wide CJK and emoji as two, combining marks as none', () => {
    expect(displayWidth('ord-0000123')).toBe(11);
    expect(displayWidth('支付')).toBe(4);
    expect(displayWidth('ｐａｙ')).toBe(6);
    expect(displayWidth('🚀')).toBe(2);
    expect(displayWidth('e\u0301')).toBe(1);
    expect(displayWidth('a\u200bb')).toBe(2);
  });

  it('cuts to a number of columns with an ellipsis, never splitting a wide character', () => {
    expect(truncateToWidth('payments-idem@node-a', 8)).toBe('payment…');
    expect(displayWidth(truncateToWidth('payments-idem@node-a', 8))).toBe(8);
    expect(truncateToWidth('支付支付', 4)).toBe('支…');
    expect(displayWidth(truncateToWidth('支付支付', 4))).toBeLessThanOrEqual(4);
    expect(truncateToWidth('short', 8)).toBe('short');
    expect(truncateToWidth('🚀🚀', 1)).toBe('…');
  });

  it('pads to a number of columns by display width', () => {
    expect(padToWidth('支', 4)).toBe('支  ');
    expect(padToWidth('toolong', 3)).toBe('toolong');
  });

  it('replaces control characters and bidirectional overrides, which could steer the terminal', () => {
    expect(terminalSafe('\x1b[2Jkey\x07\u202eevil\u2066')).toBe('\ufffd[2Jkey\ufffd\ufffdevil\ufffd');
    expect(terminalSafe('\x9b31m')).toBe('\ufffd31m');
    expect(terminalSafe('plain 支付 key')).toBe('plain 支付 key');
  });
});
