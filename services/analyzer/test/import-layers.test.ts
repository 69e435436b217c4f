import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCES = fileURLToPath(new URL('../src/', import.meta.url));

/**
 * The service's layers, from the entry points down to what everything uses. A file or folder of
 * `src/` imports only from layers below its own: the processes wire the surfaces, the surfaces
 * read the pipeline, and nothing below reaches back up. A folder stands for every file in it.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['index.ts', 'cli.ts'],
  ['demo.ts'],
  ['kafka/'],
  ['serve.ts', 'analyze/'],
  ['api-with-alerts.ts', 'metrics.ts', 'self-telemetry.ts'],
  ['web/'],
  ['api/'],
  ['presentation/'],
  ['receivers/'],
  ['pipeline/', 'back-to-back.ts', 'shutdown-stack.ts'],
  ['config.ts', 'startup-errors.ts', 'thread-bootstrap.ts'],
  ['auth/', 'errors.ts', 'logger.ts', 'listen-address.ts', 'node-flags.ts'],
];

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The unit of `src/` a file belongs to: its top folder (`api/`) or, at the top, itself. */
function unitOf(file: string): string {
  const parts = relative(SOURCES, file).split(sep);
  return parts.length > 1 ? `${parts[0]}/` : (parts[0] ?? '');
}

function layerOf(unit: string): number {
  return LAYERS.findIndex((layer) => layer.includes(unit));
}

function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((match) =>
    resolve(dirname(file), match[1] ?? ''),
  );
}

describe('the service’s import layers', () => {
  const files = sourceFiles(SOURCES);

  it('places every file and folder of src in one layer', () => {
    const units = [...new Set(files.map(unitOf))];
    expect(units.filter((unit) => layerOf(unit) < 0)).toEqual([]);
  });

  it('has no import from a layer up to one above it or beside it', () => {
    const upward: string[] = [];
    for (const file of files) {
      const from = unitOf(file);
      for (const target of relativeImports(file)) {
        if (!target.startsWith(SOURCES)) continue;
        const to = unitOf(target);
        if (to !== from && layerOf(to) <= layerOf(from)) upward.push(`${relative(SOURCES, file)} → ${to}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('sees the imports it judges', () => {
    // A pattern that matched nothing would pass the test above for any layout.
    const seen = files.flatMap(relativeImports).filter((target) => unitOf(target) === 'config.ts');
    expect(seen.length).toBeGreaterThan(5);
  });
});
