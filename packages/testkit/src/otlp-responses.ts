import protobuf from 'protobufjs';

/**
 * Decoders for what keyscope's receivers answer, built from the .proto field numbers with
 * protobufjs so that tests check the bytes independently of the otlp package's own encoders.
 */
const root = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { typeUrl: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
          },
        },
        rpc: {
          nested: {
            // google/rpc/status.proto
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
          },
        },
      },
    },
    // opentelemetry/proto/collector/trace/v1/trace_service.proto
    ExportTraceServiceResponse: { fields: { partialSuccess: { type: 'ExportTracePartialSuccess', id: 1 } } },
    ExportTracePartialSuccess: {
      fields: { rejectedSpans: { type: 'int64', id: 1 }, errorMessage: { type: 'string', id: 2 } },
    },
  },
});

const statusType = root.lookupType('google.rpc.Status');
const responseType = root.lookupType('ExportTraceServiceResponse');
const options = { longs: Number, defaults: false };

export interface DecodedStatus {
  code?: number;
  message?: string;
}

export interface DecodedExportResponse {
  /** Absent on full success, as the OTLP spec requires. */
  partialSuccess?: { rejectedSpans?: number; errorMessage?: string };
}

export function decodeRpcStatus(bytes: Uint8Array): DecodedStatus {
  return statusType.toObject(statusType.decode(bytes), options) as DecodedStatus;
}

export function decodeExportResponse(bytes: Uint8Array): DecodedExportResponse {
  return responseType.toObject(responseType.decode(bytes), options) as DecodedExportResponse;
}
