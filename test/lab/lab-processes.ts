import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Starting, watching and stopping the lab's Node processes (payments nodes, the checkout client). */
const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..', '..');

/** Every lab process started and not yet exited: whoever started them kills what is left. */
export const children = new Set<ChildProcess>();

/** What a payments node reads from its environment. */
export interface PaymentsNodeSettings {
  readonly name: string;
  readonly port: number;
  readonly ledgerPath: string;
  readonly ttlMillis: number;
  readonly otlpUrl: string;
}

export function paymentsNodeEnv(settings: PaymentsNodeSettings): Record<string, string> {
  return {
    LAB_PORT: String(settings.port),
    LAB_LEDGER: settings.ledgerPath,
    LAB_TTL_MILLIS: String(settings.ttlMillis),
    LAB_OTLP_URL: settings.otlpUrl,
    LAB_RESOURCE: JSON.stringify({
      'service.name': 'payments',
      'service.instance.id': settings.name,
      'k8s.cluster.name': 'lab',
      'cloud.region': 'local',
    }),
  };
}

/** A node or the client that has not started in this long is a failed recording. */
const START_TIMEOUT_MILLIS = 60_000;

/** `script` (a file of this folder) under the lab's SDK, with an IPC channel and its stdout piped. */
export function labProcess(script: string, env: Record<string, string>): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@keyscope/source',
      '--import',
      'tsx',
      '--import',
      join(HERE, 'instrumentation.ts'),
      join(HERE, script),
    ],
    {
      cwd: REPO,
      // The stable HTTP conventions (`http.response.status_code`, `error.type`): what keyscope reads.
      env: { ...process.env, OTEL_SEMCONV_STABILITY_OPT_IN: 'http', ...env },
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Resolves when the process sends `{ ready: true }`; rejects if it exits or takes too long first. */
export function whenReady(child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start in ${START_TIMEOUT_MILLIS} ms`)),
      START_TIMEOUT_MILLIS,
    );
    child.on('message', (message: { ready?: boolean }) => {
      if (message.ready) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} before it was ready`));
    });
  });
}

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}
