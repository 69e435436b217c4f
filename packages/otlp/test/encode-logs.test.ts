import { ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeLogsJson } from '../src/decode-logs-json.ts';
import { decodeLogs } from '../src/decode-logs-protobuf.ts';
import { encodeLogs, encodeLogsJson } from '../src/encode-logs.ts';
import type { LogRecord } from '../src/log-record.ts';
import { sdkLogRecords } from './support/sdk-log-records.ts';

const plain = (records: LogRecord[]) =>
  records.map((r) => ({
    ...r,
    attributes: { ...r.attributes },
    resource: { attributes: { ...r.resource.attributes } },
  }));

describe('encodeLogs / encodeLogsJson', () => {
  const decoded = decodeLogs(ProtobufLogsSerializer.serializeRequest(sdkLogRecords())!);

  it('round-trips decoded records through protobuf', () => {
    expect(plain(decodeLogs(encodeLogs(decoded)))).toEqual(plain(decoded));
  });

  it('round-trips decoded records through OTLP/JSON', () => {
    expect(plain(decodeLogsJson(JSON.stringify(encodeLogsJson(decoded))))).toEqual(plain(decoded));
  });

  it('refuses a record whose id it cannot encode', () => {
    const bad = { ...decoded[0]!, traceId: 'xyz' };
    expect(() => encodeLogs([bad])).toThrow(TypeError);
    expect(() => encodeLogsJson([bad])).toThrow(TypeError);
  });
});
