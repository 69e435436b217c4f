import * as grpc from '@grpc/grpc-js';
import { encodeExportResponse, type OtlpSignal } from '@keyscope/otlp';
import type { Logger } from '../logger.ts';
import { type Ingest, isIngestFailure } from './ingest.ts';
import { formatHostPort, type Receiver } from './listen-address.ts';
import { wholePayload } from './payload-bytes.ts';

export const TRACE_SERVICE_EXPORT_PATH = '/opentelemetry.proto.collector.trace.v1.TraceService/Export';
export const LOGS_SERVICE_EXPORT_PATH = '/opentelemetry.proto.collector.logs.v1.LogsService/Export';

export interface OtlpGrpcReceiverOptions {
  readonly host: string;
  /** 0 picks a free port; `address.port` says which. */
  readonly port: number;
  /**
   * grpc-js enforces it on the message after decompression and answers RESOURCE_EXHAUSTED past it
   * (which OTLP clients do not retry) before the handler runs.
   */
  readonly maxReceiveMessageBytes: number;
  /**
   * Calls one connection may have open at once, advertised in HTTP/2 SETTINGS: a client waits
   * before opening more. It bounds what one connection holds while its messages arrive.
   */
  readonly maxConcurrentStreams: number;
  /**
   * The server pings each connection this often and closes it when a ping goes unanswered for
   * `keepaliveTimeoutMillis`, so that a peer that vanished without closing does not hold its
   * streams forever.
   */
  readonly keepaliveTimeMillis: number;
  readonly keepaliveTimeoutMillis: number;
  readonly ingest: Ingest;
  readonly logger: Logger;
}

const identity = (bytes: Buffer): Buffer => bytes;

/**
 * A collector service's `Export` with raw bytes on both sides: the request reaches the handler as
 * the encoded ExportTraceServiceRequest (ExportLogsServiceRequest) for the otlp decoder, and the
 * handler answers with the encoded response. No proto loader: the otlp package owns the wire format.
 */
function exportService(path: string): grpc.ServiceDefinition {
  return {
    Export: {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      responseDeserialize: identity,
    },
  };
}

const SERVICE_PATHS: Readonly<Record<OtlpSignal, string>> = {
  traces: TRACE_SERVICE_EXPORT_PATH,
  logs: LOGS_SERVICE_EXPORT_PATH,
};

/**
 * OTLP/gRPC receiver of traces (`opentelemetry.proto.collector.trace.v1.TraceService/Export`) and
 * logs (`opentelemetry.proto.collector.logs.v1.LogsService/Export`), both through one ingest,
 * accepting gzip (grpc-js decompresses `grpc-encoding: gzip` messages itself), answering with the
 * codes of the OTLP specification: INVALID_ARGUMENT for bad payloads, UNAVAILABLE when saturated or
 * when the pipeline asks the sender to retry. Resolves once listening.
 *
 * grpc-js calls the handler once the whole message has arrived, so a call takes an admission
 * slot only then: a sender slow to send its message holds a stream, never a slot.
 */
export async function startOtlpGrpcReceiver(options: OtlpGrpcReceiverOptions): Promise<Receiver> {
  const { ingest } = options;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': options.maxReceiveMessageBytes,
    'grpc.max_concurrent_streams': options.maxConcurrentStreams,
    'grpc.keepalive_time_ms': options.keepaliveTimeMillis,
    'grpc.keepalive_timeout_ms': options.keepaliveTimeoutMillis,
  });

  const exportCall =
    (signal: OtlpSignal): grpc.handleUnaryCall<Buffer, Uint8Array> =>
    (call, callback) => {
      ingest.received('grpc');
      const slot = ingest.admit('grpc');
      if (isIngestFailure(slot)) {
        callback({ code: slot.grpcCode, details: slot.message });
        return;
      }
      ingest
        .export('grpc', slot, {
          signal,
          encoding: 'protobuf',
          bytes: wholePayload(call.request),
          compressedBytes: 0,
        })
        .then(
          (outcome) => {
            if (outcome.accepted) callback(null, encodeExportResponse(outcome.result, signal));
            else callback({ code: outcome.failure.grpcCode, details: outcome.failure.message });
          },
          (error: unknown) => {
            // ingest.export settles every failure into an outcome; this is a bug in it.
            options.logger.error(`otlp-grpc: ${error instanceof Error ? error.stack : String(error)}`);
            callback({ code: grpc.status.INTERNAL, details: 'internal error' });
          },
        );
    };
  for (const [signal, path] of Object.entries(SERVICE_PATHS) as [OtlpSignal, string][]) {
    server.addService(exportService(path), { Export: exportCall(signal) });
  }

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      formatHostPort({ host: options.host, port: options.port }),
      grpc.ServerCredentials.createInsecure(),
      (error, boundPort) => (error ? reject(error) : resolve(boundPort)),
    );
  });

  let stopping: Promise<void> | undefined;
  return {
    address: { host: options.host, port },
    stop(drainTimeoutMillis) {
      stopping ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), drainTimeoutMillis);
        // tryShutdown stops accepting calls and waits for the running ones to be answered.
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return stopping;
    },
  };
}
