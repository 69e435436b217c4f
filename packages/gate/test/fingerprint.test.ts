import { describe, expect, it } from 'vitest';
import { requestFingerprint } from '../src/fingerprint.ts';

describe('requestFingerprint', () => {
  it('matches one payload rebuilt with another key order', () => {
    expect(
      requestFingerprint('POST', '/payments', { amount: 1, card: { last4: '4242', exp: '12/30' } }),
    ).toBe(requestFingerprint('post', '/payments', { card: { exp: '12/30', last4: '4242' }, amount: 1 }));
  });

  it('differs for another payload, another route, or another method', () => {
    const base = requestFingerprint('POST', '/payments', { amount: 1 });
    expect(requestFingerprint('POST', '/payments', { amount: 2 })).not.toBe(base);
    expect(requestFingerprint('POST', '/refunds', { amount: 1 })).not.toBe(base);
    expect(requestFingerprint('PUT', '/payments', { amount: 1 })).not.toBe(base);
    expect(requestFingerprint('POST', '/payments', [1, 2])).not.toBe(
      requestFingerprint('POST', '/payments', [2, 1]),
    );
  });

  it('hashes text and bytes as sent, apart from a JSON value with the same text', () => {
    expect(requestFingerprint('POST', '/p', 'a=1')).toBe(requestFingerprint('POST', '/p', 'a=1'));
    expect(requestFingerprint('POST', '/p', Buffer.from('a=1'))).not.toBe(
      requestFingerprint('POST', '/p', 'a=1'),
    );
    expect(requestFingerprint('POST', '/p', '1')).not.toBe(requestFingerprint('POST', '/p', 1));
  });
});
