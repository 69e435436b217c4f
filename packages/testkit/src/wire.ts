/** `@keyscope/testkit/wire`: what tests put on the wire to keyscope's receivers, and read back. */
export { gzipBomb } from './gzip-bomb.ts';
export {
  type DecodedExportResponse,
  type DecodedStatus,
  decodeExportResponse,
  decodeRpcStatus,
} from './otlp-responses.ts';
export {
  connectHttp2,
  grpcPrefix,
  openRawGrpcCall,
  type RawGrpcAnswer,
  type RawGrpcCall,
  type RawGrpcCallOptions,
} from './raw-grpc.ts';
export {
  openRawConnection,
  parseResponses,
  type RawConnection,
  type RawRequestOptions,
  type RawResponse,
  rawPost,
} from './raw-http.ts';
