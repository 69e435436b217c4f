import { describe, expect, it } from 'vitest';
import { ANALYZER_ERRORS } from '../src/errors.ts';

describe('analyzer error codes', () => {
  it('declares only KS_ANALYZER_ codes', () => {
    for (const definition of ANALYZER_ERRORS) expect(definition.code).toMatch(/^KS_ANALYZER_[A-Z_]+$/);
  });
});
