#!/usr/bin/env node
// The `keyscope` command. Installed from the packed tarball (services/analyzer/scripts/pack-cli.ts)
// it runs the bundled CLI in ../dist; in a checkout (`pnpm keyscope` runs it there), the
// TypeScript sources through tsx.
//
// Node takes keyscope's flags (src/node-flags.ts: the service's for serve and demo, the batch
// job's for analyze) only on its own command line, which an installed bin cannot write. Started
// without its subcommand's flags, this starts node again with them and stands in for that process:
// the child runs in its own process group, so a signal (Ctrl-C included) reaches it once, relayed
// from here, and this exits as the child does. A flag the operator gave node, on its command line
// or in NODE_OPTIONS, stands.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const packed = existsSync(new URL('../dist/cli.js', import.meta.url));
if (!packed) (await import('tsx/esm/api')).register();
const { nodeFlagsFor } = await import(packed ? '../dist/node-flags.js' : '../src/node-flags.ts');

const flagName = (arg) =>
  arg
    .split('=')[0]
    .replaceAll('_', '-')
    .replace(/^--no-/, '--');
const nodeOptions = (process.env.NODE_OPTIONS ?? '').split(/\s+/).filter((arg) => arg.startsWith('-'));
const given = new Set([...nodeOptions, ...process.execArgv].map(flagName));
const missing = nodeFlagsFor(process.argv[2]).filter((flag) => !given.has(flagName(flag)));

if (missing.length === 0) {
  const { runCli } = await import(packed ? '../dist/cli.js' : '../src/cli.ts');
  process.exit(await runCli(process.argv.slice(2)));
}

const child = spawn(
  process.execPath,
  [...process.execArgv, ...missing, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
  // Windows has no process groups to leave, and `detached` there opens a new console.
  { stdio: 'inherit', detached: process.platform !== 'win32' },
);
const RELAYED = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of RELAYED) process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
  process.stderr.write(`keyscope: cannot start ${process.execPath}: ${error.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  if (signal === null) process.exit(code ?? 1);
  // Ended by a signal: end the same way, for a shell or supervisor to see.
  for (const relayed of RELAYED) process.removeAllListeners(relayed);
  process.kill(process.pid, signal);
});
