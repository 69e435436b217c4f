import { describe, expect, it } from 'vitest';
import { ANALYZE_ERRORS } from '../../src/analyze/analyze-errors.ts';

describe('keyscope analyze error codes', () => {
  it('declares only permanent KS_ANALYZE_ codes', () => {
    for (const definition of ANALYZE_ERRORS) {
      expect(definition.code).toMatch(/^KS_ANALYZE_[A-Z_]+$/);
      expect(definition.retryable).toBe(false);
    }
  });
});
