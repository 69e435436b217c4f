import { readFileSync } from 'node:fs';
import { declaredErrors } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';

/**
 * Every error code any package declares is documented in docs/errors.md, with its HTTP status —
 * the registry is filled at import, so import every package that declares codes.
 */
describe('docs/errors.md', () => {
  it('documents every declared error code with its HTTP status', async () => {
    await Promise.all([
      import('@keyscope/otlp'),
      import('@keyscope/attempts'),
      import('@keyscope/store'),
      import('@keyscope/alerts'),
      import('@keyscope/gate'),
      import('@keyscope/analyzer'),
      import('../services/analyzer/src/api/api-errors.ts'),
      import('../services/analyzer/src/analyze/analyze-errors.ts'),
      import('../services/analyzer/src/kafka/kafka-errors.ts'),
    ]);
    const docs = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');
    const codes = declaredErrors();
    expect(codes.length).toBeGreaterThan(20);
    const missing = codes.filter((definition) => {
      const row = docs
        .split('\n')
        .find((line) => line.startsWith('|') && line.includes(`\`${definition.code}\``));
      return row === undefined || !row.includes(` ${definition.httpStatus} `);
    });
    expect(missing.map((d) => d.code)).toEqual([]);
  });
});
