import { describe, expect, it } from 'vitest';
import { protoMessage, tag, WireType } from '../src/proto-message.ts';

describe('protoMessage', () => {
  const message = protoMessage('Example', {
    traceId: tag(1, WireType.LEN),
    startTimeUnixNano: tag(7, WireType.I64),
    flags: tag(16, WireType.I32),
  });

  it('gives each field the tag protobuf writes: its number shifted three bits, then its wire type', () => {
    expect(message.tag).toEqual({ traceId: 0x0a, startTimeUnixNano: 0x39, flags: 0x85 });
  });

  it('lists the fields by number with their proto names and wire types, for refusing a wrong wire type', () => {
    expect(message.fields[1]).toEqual(['trace_id', WireType.LEN]);
    expect(message.fields[7]).toEqual(['start_time_unix_nano', WireType.I64]);
    expect(message.fields[16]).toEqual(['flags', WireType.I32]);
    expect(message.fields[2]).toBeUndefined();
  });

  it('refuses a table that gives two fields one number', () => {
    expect(() => protoMessage('Broken', { a: tag(1, WireType.LEN), b: tag(1, WireType.VARINT) })).toThrow(
      RangeError,
    );
  });
});
