import { protoMessage, tag, WireType } from './proto-message.ts';
import { WireWriter } from './wire-writer.ts';

/** google/rpc/status.proto (keyscope writes no `details`, field 3). */
const RPC_STATUS = protoMessage('google.rpc.Status', {
  code: tag(1, WireType.VARINT),
  message: tag(2, WireType.LEN),
});

/**
 * `google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3 }`, the body
 * OTLP/HTTP sends with a 4xx/5xx. keyscope sends no details. A negative code is written as protobuf
 * writes an int32: sign-extended to ten bytes.
 */
export function encodeRpcStatus(code: number, message: string): Uint8Array {
  const w = new WireWriter(32 + message.length * 3);
  if (code !== 0) {
    w.tag(RPC_STATUS.tag.code);
    w.int64(code | 0);
  }
  if (message !== '') w.stringField(RPC_STATUS.tag.message, message);
  return w.finish();
}

/** The JSON form of `encodeRpcStatus`, for OTLP/HTTP requests sent as JSON. */
export function rpcStatusJson(code: number, message: string): object {
  return { code: code | 0, message };
}
