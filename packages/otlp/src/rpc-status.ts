import { WireWriter } from './wire-writer.ts';

/**
 * `google.rpc.Status { int32 code = 1; string message = 2; repeated Any details = 3 }`, the body
 * OTLP/HTTP sends with a 4xx/5xx. keyscope sends no details. A negative code is written as protobuf
 * writes an int32: sign-extended to ten bytes.
 */
export function encodeRpcStatus(code: number, message: string): Uint8Array {
  const w = new WireWriter(32 + message.length * 3);
  if (code !== 0) {
    w.tag(1, 0);
    w.int64(code | 0);
  }
  if (message !== '') w.stringField(2, message);
  return w.finish();
}

/** The JSON form of `encodeRpcStatus`, for OTLP/HTTP requests sent as JSON. */
export function rpcStatusJson(code: number, message: string): object {
  return { code: code | 0, message };
}
