import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { decodeTraces, encodeTracesJson } from '@keyscope/otlp';

/**
 * A stand-in for a Collector with the file exporter: takes OTLP/HTTP protobuf trace exports on
 * 127.0.0.1 and keeps each one as a line of OTLP/JSON, in arrival order, the JSON lines
 * `keyscope analyze` reads. `save` writes them gzipped.
 */
export interface CaptureReceiver {
  readonly url: string;
  /** Exports received so far. */
  readonly requests: number;
  save(path: string): void;
  close(): Promise<void>;
}

export async function startCaptureReceiver(): Promise<CaptureReceiver> {
  const lines: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        const spans = decodeTraces(Buffer.concat(chunks));
        if (spans.length > 0) lines.push(JSON.stringify(encodeTracesJson(spans)));
        // An empty ExportTraceServiceResponse: everything accepted.
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } catch {
        response.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    get requests() {
      return lines.length;
    },
    save(path) {
      writeFileSync(path, gzipSync(`${lines.join('\n')}\n`, { level: 9 }));
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
