import { describe, expect, it } from 'vitest';
import { ATTEMPTS_ERRORS } from '../src/errors.ts';

describe('attempts error codes', () => {
  it('declares only permanent KS_MAPPING_ codes', () => {
    for (const definition of ATTEMPTS_ERRORS) {
      expect(definition.code).toMatch(/^KS_MAPPING_[A-Z_]+$/);
      expect(definition.retryable).toBe(false);
    }
  });
});
