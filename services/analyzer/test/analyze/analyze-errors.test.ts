import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ANALYZE_ERRORS } from '../../src/analyze/analyze-errors.ts';

function analyzerSection(): string {
  const text = readFileSync(new URL('../../../../docs/errors.md', import.meta.url), 'utf8');
  const start = text.indexOf('\n## analyzer');
  expect(start).toBeGreaterThanOrEqual(0);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

describe('keyscope analyze error codes', () => {
  it('documents every code in the analyzer section of docs/errors.md with its HTTP status and retry flag', () => {
    const rows = analyzerSection()
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    for (const definition of ANALYZE_ERRORS) {
      expect(rows).toContainEqual([
        `\`${definition.code}\``,
        String(definition.httpStatus),
        definition.retryable ? 'retryable' : 'permanent',
        expect.any(String),
      ]);
    }
  });

  it('declares only permanent KS_ANALYZE_ codes', () => {
    for (const definition of ANALYZE_ERRORS) {
      expect(definition.code).toMatch(/^KS_ANALYZE_[A-Z_]+$/);
      expect(definition.retryable).toBe(false);
    }
  });
});
