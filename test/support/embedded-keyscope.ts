import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningService, resolveServeConfig, silentLogger, startServe } from '@keyscope/analyzer';

/** `keyscope serve` embedded in the test process, with the folder of its SQLite file. */
export interface EmbeddedKeyscope {
  readonly service: RunningService;
  /** `http://127.0.0.1:<port>` of its API. */
  readonly api: string;
  readonly dir: string;
  /** Stops the service, then removes its folder. */
  stop(): Promise<void>;
}

/**
 * Starts serve in this process as `startServe` embeds it: SQLite in a new temporary folder named
 * after `name`, every port chosen by the system, then `settings` (any subset of the config file's
 * keys) laid over that and validated as serve validates its config.
 */
export async function startEmbeddedKeyscope(name: string, settings: object = {}): Promise<EmbeddedKeyscope> {
  const dir = mkdtempSync(join(tmpdir(), `keyscope-${name}-`));
  const base = resolveServeConfig({
    api: { port: 0 },
    db: { path: join(dir, 'keyscope.db') },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
  });
  let service: RunningService;
  try {
    service = await startServe(resolveServeConfig(settings, base), { logger: silentLogger });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    service,
    api: `http://127.0.0.1:${service.addresses.api.port}`,
    dir,
    async stop() {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
