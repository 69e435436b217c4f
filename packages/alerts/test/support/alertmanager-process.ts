import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ALERTMANAGER_BINARY = '/usr/bin/prometheus-alertmanager';

export interface AlertmanagerProcess {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  stop(): Promise<void>;
}

/** Routes everything to a receiver that notifies nobody: the test reads the API, not notifications. */
const CONFIG = `route:
  receiver: 'null'
receivers:
  - name: 'null'
`;

/**
 * Starts the Debian package's Alertmanager on a free loopback port with clustering off, a temporary
 * config and storage dir, and waits until it answers /-/ready. Throws (so the test fails, never
 * skips) when the binary is missing.
 */
export async function startAlertmanager(): Promise<AlertmanagerProcess> {
  if (!existsSync(ALERTMANAGER_BINARY)) {
    throw new Error(
      `${ALERTMANAGER_BINARY} is missing: install it with \`apt-get install -y prometheus-alertmanager\` (CI's .ci/run must do so too)`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'keyscope-alertmanager-'));
  writeFileSync(join(dir, 'alertmanager.yml'), CONFIG);
  // The port is free when chosen and bound a moment later; another process may take it in between,
  // in which case Alertmanager exits and the next port is tried.
  for (let tries = 0; tries < 3; tries++) {
    const port = await freePort();
    const child = spawn(
      ALERTMANAGER_BINARY,
      [
        `--config.file=${join(dir, 'alertmanager.yml')}`,
        `--storage.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--cluster.listen-address=',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString('utf8')).slice(-4000);
    });
    const url = `http://127.0.0.1:${port}`;
    if (await becomesReady(url, child)) {
      return {
        url,
        stop: async () => {
          await terminate(child);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    await terminate(child);
    if (tries === 2) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`Alertmanager did not become ready; its log:\n${log}`);
    }
  }
  throw new Error('unreachable');
}

async function becomesReady(url: string, child: ChildProcess): Promise<boolean> {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (child.exitCode !== null) return false;
    try {
      const response = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return true;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}
