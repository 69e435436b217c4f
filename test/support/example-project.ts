import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));
const testPackages = join(repositoryRoot, 'test/node_modules');

/**
 * A project outside the workspace that runs documented example files with plain `node`, as a user
 * runs them: `@keyscope/gate` as its tarball installs it (the package's manifest and `dist/`, its
 * sources compiled to JavaScript), and the other `packages` linked from the test package's
 * dependencies, at the versions the lockfile pins. Compiling file by file takes a second where
 * the gate's `npm pack` (test/gate-package) takes its full type check.
 */
export function createExampleProject(
  dir: string,
  options: { files: ReadonlyMap<string, string>; packages: readonly string[] },
): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'example', private: true, type: 'module' }),
  );
  for (const [name, text] of options.files) writeFileSync(join(dir, name), text);
  for (const name of options.packages) {
    const link = join(dir, 'node_modules', name);
    mkdirSync(join(link, '..'), { recursive: true });
    symlinkSync(join(testPackages, name), link, 'dir');
  }
  buildGate(join(dir, 'node_modules/@keyscope/gate'));
}

function buildGate(target: string): void {
  const source = join(repositoryRoot, 'packages/gate');
  mkdirSync(join(target, 'dist'), { recursive: true });
  writeFileSync(join(target, 'package.json'), readFileSync(join(source, 'package.json')));
  for (const file of readdirSync(join(source, 'src'))) {
    if (!file.endsWith('.ts')) continue;
    const { outputText } = ts.transpileModule(readFileSync(join(source, 'src', file), 'utf8'), {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
        rewriteRelativeImportExtensions: true,
      },
    });
    writeFileSync(join(target, 'dist', file.replace(/\.ts$/, '.js')), outputText);
  }
}
