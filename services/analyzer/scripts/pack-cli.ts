import { execFile } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';
import { bundlePage, PREBUILT_SCRIPT, PREBUILT_STYLESHEET } from '../src/web/page-bundle.ts';

/**
 * Packs the `keyscope` command into `keyscope-<version>.tgz`, for `npm install -g` on a machine
 * with Node.js and npm only: the CLI and the workspace packages it imports bundled by esbuild into
 * JavaScript (dist/), the web page bundled beside them, and every other package it imports left to
 * npm as a dependency (better-sqlite3's native addon among them). Nothing compiles TypeScript or
 * bundles at run time.
 *
 *   pnpm pack:cli [--out DIR]     (default DIR: dist/ at the repository root)
 */

const ANALYZER = fileURLToPath(new URL('../', import.meta.url));
const ROOT = resolve(ANALYZER, '../..');
/** The processes the bundle starts from: the CLI, the bin's flag list, `analyze`'s threads, serve's archive thread. */
const ENTRY_POINTS = {
  cli: join(ANALYZER, 'src/cli.ts'),
  'node-flags': join(ANALYZER, 'src/node-flags.ts'),
  'extract-worker': join(ANALYZER, 'src/analyze/extract-worker.ts'),
  'archive-worker': join(ANALYZER, 'src/receivers/archive-worker.ts'),
};
/** Files the bundle reads beside itself at run time (`new URL('./…', import.meta.url)`). */
const ASSETS = [join(ANALYZER, 'src/api/api-reference.css')];
/** Imported only to bundle the page from its sources, which the packed CLI never does. */
const BUILD_ONLY = new Set(['esbuild']);

interface Manifest {
  name: string;
  version: string;
  description?: string;
  engines?: Record<string, string>;
  dependencies?: Record<string, string>;
}

const readManifest = async (dir: string) =>
  JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as Manifest;

/** `lodash/fp` → `lodash`, `@scope/name/sub` → `@scope/name`. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

interface WorkspacePackage {
  readonly dir: string;
  readonly manifest: Manifest;
}

/** The workspace's own packages (bundled), by name. */
async function workspacePackages(): Promise<Map<string, WorkspacePackage>> {
  const packages = new Map<string, WorkspacePackage>();
  for (const group of ['packages', 'services']) {
    for (const name of await readdir(join(ROOT, group))) {
      const dir = join(ROOT, group, name);
      const manifest = await readManifest(dir);
      packages.set(manifest.name, { dir, manifest });
    }
  }
  return packages;
}

/** Leaves every registry package to npm, noting which the bundle imports. */
function externalPackages(workspace: Map<string, WorkspacePackage>, imported: Set<string>): Plugin {
  return {
    name: 'external-packages',
    setup(plugin) {
      plugin.onResolve({ filter: /^[^./]/ }, (args) => {
        if (isBuiltin(args.path)) return { external: true };
        const name = packageName(args.path);
        if (workspace.has(name)) return undefined;
        imported.add(name);
        return { external: true };
      });
    },
  };
}

/**
 * The packed package's dependencies: each registry package the bundle imports, pinned to the
 * version the workspace installed for the package that declares it, the one its tests run. An
 * import no workspace package declares stops the pack.
 */
async function dependencies(
  imported: Set<string>,
  workspace: Map<string, WorkspacePackage>,
): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const name of [...imported].sort()) {
    if (BUILD_ONLY.has(name)) continue;
    const declaring = [...workspace.values()].find(
      ({ manifest }) => manifest.dependencies?.[name] !== undefined,
    );
    if (declaring === undefined)
      throw new Error(`the CLI imports ${name}, which no workspace package depends on`);
    result[name] = (await readManifest(join(declaring.dir, 'node_modules', name))).version;
  }
  return result;
}

export interface PackedCli {
  /** The tarball's path. */
  readonly tarball: string;
  readonly dependencies: Record<string, string>;
}

/** Builds the package in a scratch folder and packs it into `outDir`. */
export async function packCli(outDir: string): Promise<PackedCli> {
  const workspace = await workspacePackages();
  const { manifest: analyzer } = workspace.get('@keyscope/analyzer')!;
  const stage = await mkdtemp(join(tmpdir(), 'keyscope-pack-'));
  try {
    const dist = join(stage, 'dist');
    const imported = new Set<string>();
    await build({
      entryPoints: ENTRY_POINTS,
      outdir: dist,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      conditions: ['@keyscope/source'],
      plugins: [externalPackages(workspace, imported)],
      logLevel: 'warning',
    });
    for (const asset of ASSETS) await copyFile(asset, join(dist, basename(asset)));
    const page = await bundlePage();
    await mkdir(join(dist, 'web-page'));
    await writeFile(join(dist, 'web-page', PREBUILT_SCRIPT), page.script);
    await writeFile(join(dist, 'web-page', PREBUILT_STYLESHEET), page.stylesheet);

    await mkdir(join(stage, 'bin'));
    await copyFile(join(ANALYZER, 'bin/keyscope.js'), join(stage, 'bin/keyscope.js'));
    await copyFile(join(ROOT, 'README.md'), join(stage, 'README.md'));
    const manifest = {
      name: 'keyscope',
      version: analyzer.version,
      description:
        'Finds mutations that ran twice despite one idempotency key, from the OpenTelemetry traces your services already emit',
      type: 'module',
      bin: { keyscope: 'bin/keyscope.js' },
      engines: (await readManifest(ROOT)).engines,
      dependencies: await dependencies(imported, workspace),
    };
    await writeFile(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);

    await mkdir(outDir, { recursive: true });
    const { stdout } = await promisify(execFile)(
      'npm',
      ['pack', '--json', '--pack-destination', resolve(outDir)],
      { cwd: stage },
    );
    const [packed] = JSON.parse(stdout) as [{ filename: string }];
    return { tarball: join(resolve(outDir), packed.filename), dependencies: manifest.dependencies };
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: join(ROOT, 'dist') } } });
  const { tarball } = await packCli(values.out);
  process.stdout.write(`${tarball}\n`);
}
