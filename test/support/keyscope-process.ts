import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

/** `keyscope serve` as a child process, as users run it, with the addresses it logged. */
export interface KeyscopeProcess {
  child: ChildProcessWithoutNullStreams;
  api: string;
  otlpHttp: string;
  output: () => string;
  exited: Promise<number | null>;
}

export async function startKeyscope(args: string[], timeoutMillis = 30_000): Promise<KeyscopeProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'services/analyzer/src/cli.ts',
      'serve',
      '--api-port',
      '0',
      '--otlp-http-port',
      '0',
      '--otlp-grpc-port',
      '0',
      ...args,
    ],
    { cwd: repositoryRoot },
  );
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + timeoutMillis;
  while (Date.now() < deadline && child.exitCode === null) {
    const api = /^api listening on (\S+)$/m.exec(output)?.[1];
    const otlpHttp = /^otlp-http listening on (\S+)$/m.exec(output)?.[1];
    if (api !== undefined && otlpHttp !== undefined && /^otlp-grpc listening on /m.test(output)) {
      return { child, api, otlpHttp, output: () => output, exited };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`keyscope serve did not start: ${output}`);
}

export async function stopKeyscope(process: KeyscopeProcess): Promise<void> {
  if (process.child.exitCode === null) process.child.kill('SIGTERM');
  await process.exited;
}

/** Posts one protobuf ExportTraceServiceRequest; resolves with the HTTP status. */
export async function postTraces(otlpHttp: string, body: Uint8Array): Promise<number> {
  const response = await fetch(`${otlpHttp}/v1/traces`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/x-protobuf' },
  });
  await response.arrayBuffer();
  return response.status;
}
