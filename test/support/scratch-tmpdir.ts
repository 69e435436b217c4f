import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * vitest's global setup: every test process and what it starts (the CLI, Chromium, Alertmanager,
 * the mock broker) writes its temporary files under one folder of the run, through TMPDIR, which
 * `os.tmpdir()` reads; the folder is deleted when the run ends, so tests leave nothing behind in
 * the system's temporary folder. Test files run in forks, which inherit the environment set here.
 */
export default function setup(): () => void {
  // One folder for the whole run, whichever project's setup comes first (not a KEYSCOPE_ name:
  // serve refuses environment variables it does not know).
  if (process.env.SCRATCH_TMPDIR_OF_RUN !== undefined) return () => {};
  const dir = mkdtempSync(join(tmpdir(), 'keyscope-test-'));
  process.env.SCRATCH_TMPDIR_OF_RUN = dir;
  process.env.TMPDIR = dir;
  return () => {
    rmSync(dir, { recursive: true, force: true });
  };
}
