import { describe, expect, it } from 'vitest';
import { keyAttributesOf } from '../src/key-attributes.ts';

describe('keyAttributesOf', () => {
  it('reads the key of an incoming message (lower-case headers) as idempotency.key', () => {
    expect(keyAttributesOf({ headers: { 'idempotency-key': '"order-1"', host: 'a' } })).toEqual({
      'idempotency.key': 'order-1',
    });
  });

  it('reads the key of outgoing request options, in any case or as a flat list of names and values', () => {
    expect(keyAttributesOf({ headers: { 'Idempotency-Key': 'order-1' } })).toEqual({
      'idempotency.key': 'order-1',
    });
    expect(
      keyAttributesOf({ headers: ['Content-Type', 'application/json', 'IDEMPOTENCY-KEY', 'order-2'] }),
    ).toEqual({
      'idempotency.key': 'order-2',
    });
    expect(keyAttributesOf({ headers: { 'x-request-key': 'order-3' } }, 'X-Request-Key')).toEqual({
      'idempotency.key': 'order-3',
    });
  });

  it('reads the key of a fetch request as undici hands it over: a flat list, or one header text', () => {
    expect(
      keyAttributesOf({ headers: ['content-type', 'application/json', 'Idempotency-Key', 'order-4'] }),
    ).toEqual({
      'idempotency.key': 'order-4',
    });
    expect(
      keyAttributesOf({ headers: 'content-type: application/json\r\nIdempotency-Key: order-5\r\n' }),
    ).toEqual({ 'idempotency.key': 'order-5' });
    expect(keyAttributesOf({ headers: ['idempotency-key', ['a', 'b']] })).toEqual({});
    expect(keyAttributesOf({ headers: 'idempotency-key: a\r\nidempotency-key: b\r\n' })).toEqual({});
    expect(keyAttributesOf({ headers: 'content-type: application/json\r\n' })).toEqual({});
  });

  it('gives nothing for a request without a key, or with one the gate would refuse', () => {
    expect(keyAttributesOf({})).toEqual({});
    expect(keyAttributesOf({ headers: { host: 'a' } })).toEqual({});
    expect(keyAttributesOf({ headers: { 'idempotency-key': '' } })).toEqual({});
    expect(keyAttributesOf({ headers: { 'idempotency-key': ['a', 'b'] } })).toEqual({});
    expect(keyAttributesOf({ headers: { 'idempotency-key': 'k'.repeat(256) } })).toEqual({});
  });
});
