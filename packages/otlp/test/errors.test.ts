import { readFileSync } from 'node:fs';
import { declaredErrors } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { OTLP_ERRORS } from '../src/errors.ts';
import * as otlp from '../src/index.ts';

const docs = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');

/** The table rows of one `## name` section of docs/errors.md, by code. */
function documentedRows(section: string): Map<string, string[]> {
  const start = docs.indexOf(`\n## ${section}\n`);
  expect(start, `docs/errors.md has a "## ${section}" section`).toBeGreaterThanOrEqual(0);
  const next = docs.indexOf('\n## ', start + 1);
  const body = docs.slice(start, next < 0 ? undefined : next);
  const rows = new Map<string, string[]>();
  for (const line of body.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const code = /^`(KS_[A-Z0-9_]+)`$/.exec(cells[1] ?? '')?.[1];
    if (code !== undefined) rows.set(code, cells.slice(2, -1));
  }
  return rows;
}

describe('otlp error codes', () => {
  const declared = declaredErrors().filter((definition) => definition.code.startsWith('KS_OTLP_'));

  it('lists every declared code in OTLP_ERRORS and exports each one', () => {
    expect(declared.map((d) => d.code).sort()).toEqual(OTLP_ERRORS.map((d) => d.code).sort());
    const exported = Object.values(otlp).filter((value) => OTLP_ERRORS.includes(value as never));
    expect(exported).toHaveLength(OTLP_ERRORS.length);
  });

  it('documents every code in docs/errors.md with its HTTP status and retryability', () => {
    const rows = documentedRows('otlp');
    for (const definition of OTLP_ERRORS) {
      const row = rows.get(definition.code);
      expect(row, `${definition.code} is documented`).toBeDefined();
      expect(row![0]).toBe(String(definition.httpStatus));
      expect(row![1]).toBe(definition.retryable ? 'yes' : 'no');
    }
    expect([...rows.keys()].sort()).toEqual(OTLP_ERRORS.map((d) => d.code).sort());
  });

  it('makes every otlp code a permanent 400', () => {
    for (const definition of OTLP_ERRORS) {
      expect(definition.code).toMatch(/^KS_OTLP_[A-Z0-9_]+$/);
      expect(definition.httpStatus).toBe(400);
      expect(definition.retryable).toBe(false);
    }
  });
});
