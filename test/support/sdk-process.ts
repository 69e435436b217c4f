import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * `script` as a Node process under the real OpenTelemetry SDK: `instrumentation` (a module that
 * starts the SDK) is loaded with `--import` before it, the workspace packages resolve to their
 * sources, and the HTTP instrumentation emits the stable conventions (`http.response.status_code`,
 * `error.type`), which keyscope reads. The child has an IPC channel; its stderr is the test's.
 */
export function spawnUnderSdk(
  instrumentation: string,
  script: string,
  options: { env: Record<string, string>; stdout: 'pipe' | 'inherit' },
): ChildProcess {
  return spawn(
    process.execPath,
    ['--conditions=@keyscope/source', '--import', 'tsx', '--import', instrumentation, script],
    {
      cwd: repositoryRoot,
      env: { ...process.env, OTEL_SEMCONV_STABILITY_OPT_IN: 'http', ...options.env },
      stdio: ['ignore', options.stdout, 'inherit', 'ipc'],
    },
  );
}

/** A port of 127.0.0.1 free when this returns, for a child process to listen on. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A child that has not said it is ready in this long failed to start. */
const START_TIMEOUT_MILLIS = 60_000;

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

/** The process's exit code once it has exited (null when a signal ended it). */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}
