import { readFileSync } from 'node:fs';
import { declaredErrors } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { GATE_ERRORS } from '../src/errors.ts';
import * as gate from '../src/index.ts';

/** The table rows of docs/errors.md's `## gate` section, by code: [HTTP status, retryable, meaning]. */
function documentedRows(): Map<string, string[]> {
  const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const start = docs.indexOf('\n## gate\n');
  expect(start, 'docs/errors.md has a "## gate" section').toBeGreaterThanOrEqual(0);
  const next = docs.indexOf('\n## ', start + 1);
  const rows = new Map<string, string[]>();
  for (const line of docs.slice(start, next < 0 ? undefined : next).split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const code = /^`(KS_[A-Z0-9_]+)`$/.exec(cells[1] ?? '')?.[1];
    if (code !== undefined) rows.set(code, cells.slice(2, -1));
  }
  return rows;
}

describe('gate error codes', () => {
  it('lists every declared KS_GATE_ code in GATE_ERRORS, exported from the package', () => {
    const declared = declaredErrors().filter((definition) => definition.code.startsWith('KS_GATE_'));
    expect(declared.map((d) => d.code).sort()).toEqual(GATE_ERRORS.map((d) => d.code).sort());
    expect(gate.GATE_ERRORS).toBe(GATE_ERRORS);
  });

  it('documents every code in docs/errors.md with its HTTP status and retryability', () => {
    const rows = documentedRows();
    for (const definition of GATE_ERRORS) {
      const row = rows.get(definition.code);
      expect(row, `${definition.code} is documented`).toBeDefined();
      expect(row![0]).toBe(String(definition.httpStatus));
      expect(row![1]).toBe(definition.retryable ? 'yes' : 'no');
    }
    expect([...rows.keys()].sort()).toEqual(GATE_ERRORS.map((d) => d.code).sort());
  });
});
