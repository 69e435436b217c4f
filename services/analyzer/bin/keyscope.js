#!/usr/bin/env node
// The installed `keyscope` command: the CLI is TypeScript, run through tsx like `pnpm keyscope`.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src/cli.ts');
process.exit(await runCli(process.argv.slice(2)));
