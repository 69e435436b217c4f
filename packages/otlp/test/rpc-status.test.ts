import { describe, expect, it } from 'vitest';
import { encodeRpcStatus, rpcStatusJson } from '../src/rpc-status.ts';

describe('encodeRpcStatus', () => {
  it('writes code as field 1 and message as field 2 of google.rpc.Status', () => {
    // 0x08 = field 1 varint, 0x12 = field 2 length-delimited.
    expect([...encodeRpcStatus(3, 'bad')]).toEqual([0x08, 3, 0x12, 3, 0x62, 0x61, 0x64]);
  });

  it('omits default fields', () => {
    expect([...encodeRpcStatus(0, '')]).toEqual([]);
    expect([...encodeRpcStatus(0, 'x')]).toEqual([0x12, 1, 0x78]);
  });

  it('sizes multi-byte messages by their UTF-8 length', () => {
    const bytes = encodeRpcStatus(8, 'é'.repeat(100));
    expect(bytes[2]).toBe(0x12);
    // 200 bytes of UTF-8: a two-byte length prefix (0xc8 0x01).
    expect([bytes[3], bytes[4]]).toEqual([0xc8, 0x01]);
    expect(new TextDecoder().decode(bytes.subarray(5))).toBe('é'.repeat(100));
  });

  it('has a JSON form for OTLP/HTTP JSON requests', () => {
    expect(rpcStatusJson(3, 'bad')).toEqual({ code: 3, message: 'bad' });
  });
});
