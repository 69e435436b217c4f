import { describe, expect, it } from 'vitest';
import { ALERTS_ERRORS } from '../src/errors.ts';

describe('alerts error codes', () => {
  it('declares only permanent KS_ALERTS_ codes', () => {
    for (const definition of ALERTS_ERRORS) {
      expect(definition.code).toMatch(/^KS_ALERTS_[A-Z_]+$/);
      expect(definition.retryable).toBe(false);
    }
  });
});
