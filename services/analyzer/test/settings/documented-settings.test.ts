import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * Every setting docs/configuration.md documents has a test in this folder that sets it through
 * a real entry point and observes its effect, named `it('<field path>: …')`.
 *
 * Field paths:
 * - a leaf of the YAML block is its dotted path (`otlp.http.bodyLimitBytes`); a section that is a
 *   mapping (`kafka.traces`, `otlp.admission`) is covered by its leaves, never named itself;
 * - a field of a list item is named through the list with `[]` (`api.tokens[].tenant`,
 *   `alerts.sinks[].url`), its fields the union of the example items' keys;
 * - mappings whose keys are the user's own, not keyscope's (`alerts.sinks[].headers`: header
 *   names) are one leaf;
 * - fields the prose names but the YAML block does not show are listed in PROSE_FIELDS, and each
 *   must appear in the doc in backquotes.
 */

const DOC = fileURLToPath(new URL('../../../../docs/configuration.md', import.meta.url));
const FOLDER = fileURLToPath(new URL('.', import.meta.url));

/** Mappings in the YAML block whose keys are chosen by the user: one field each. */
const FREE_FORM = new Set(['alerts.sinks[].headers']);

/** Documented in the prose around the YAML block only: [field path, the name the prose uses]. */
const PROSE_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['alerts.pollIntervalMillis', 'pollIntervalMillis'],
  ['alerts.batchSize', 'batchSize'],
  ['alerts.concurrency', 'concurrency'],
  ['alerts.retryBaseMillis', 'retryBaseMillis'],
  ['alerts.sinks[].name', 'name'],
  ['alerts.sinks[].resendIntervalMillis', 'resendIntervalMillis'],
];

function yamlBlock(markdown: string): unknown {
  const match = /```yaml\n([\s\S]*?)\n```/.exec(markdown);
  if (match === null) throw new Error(`${DOC} has no yaml block`);
  return parse(match[1]!);
}

/** The field paths of `value`, by the rules above. */
function fieldPaths(value: unknown, path: string): string[] {
  if (FREE_FORM.has(path)) return [path];
  if (isMapping(value)) {
    return Object.entries(value).flatMap(([key, inner]) =>
      fieldPaths(inner, path === '' ? key : `${path}.${key}`),
    );
  }
  if (Array.isArray(value) && value.length > 0 && value.every(isMapping)) {
    const items = new Map<string, unknown>();
    for (const item of value) for (const [key, inner] of Object.entries(item)) items.set(key, inner);
    return [...items].flatMap(([key, inner]) => fieldPaths(inner, `${path}[].${key}`));
  }
  return [path];
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The field paths tests in this folder name: `it('<path>: …')`. */
function testedFields(): Map<string, string[]> {
  const tested = new Map<string, string[]>();
  for (const file of readdirSync(FOLDER).filter((name) => name.endsWith('.test.ts'))) {
    const source = readFileSync(join(FOLDER, file), 'utf8');
    for (const match of source.matchAll(/\bit\(\s*['"`]([A-Za-z][\w.[\]]*):\s/g)) {
      const path = match[1]!;
      tested.set(path, [...(tested.get(path) ?? []), file]);
    }
  }
  return tested;
}

const markdown = readFileSync(DOC, 'utf8');
const documented = [...fieldPaths(yamlBlock(markdown), ''), ...PROSE_FIELDS.map(([path]) => path)];

describe('the settings docs/configuration.md documents', () => {
  it('are found: the YAML block’s fields and those the prose names', () => {
    expect(documented).toContain('spans.maxLateMillis');
    expect(documented).toContain('kafka.traces.topic');
    expect(documented).toContain('api.tokens[].tenant');
    expect(documented).toContain('alerts.sinks[].headers');
    expect(documented).not.toContain('kafka.traces');
    for (const [, name] of PROSE_FIELDS) expect(markdown).toContain(`\`${name}\``);
  });

  it('each have a test here that sets the field and observes its effect', () => {
    const tested = testedFields();
    expect(documented.filter((path) => !tested.has(path))).toEqual([]);
  });

  it('are the only fields tests here are named after', () => {
    const known = new Set(documented);
    expect([...testedFields().keys()].filter((path) => !known.has(path))).toEqual([]);
  });
});
