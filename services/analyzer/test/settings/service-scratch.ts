import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { RunningService } from '../../src/serve.ts';

/** A test's own folder, and the service it started there (if it started one). */
export interface ServiceScratch {
  readonly dir: string;
  service: RunningService | undefined;
}

/**
 * Gives each test of the file a new temporary folder named after `name`; after the test, stops the
 * service it left in `service` and deletes the folder.
 */
export function serviceScratch(name: string): ServiceScratch {
  const scratch = { dir: '', service: undefined as RunningService | undefined };
  beforeEach(() => {
    scratch.dir = mkdtempSync(join(tmpdir(), `keyscope-${name}-`));
  });
  afterEach(async () => {
    await scratch.service?.stop();
    scratch.service = undefined;
    rmSync(scratch.dir, { recursive: true, force: true });
  });
  return scratch;
}
