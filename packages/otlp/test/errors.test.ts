import { declaredErrors } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { OTLP_ERRORS } from '../src/errors.ts';
import * as otlp from '../src/index.ts';

describe('otlp error codes', () => {
  const declared = declaredErrors().filter((definition) => definition.code.startsWith('KS_OTLP_'));

  it('lists every declared code in OTLP_ERRORS and exports each one', () => {
    expect(declared.map((d) => d.code).sort()).toEqual(OTLP_ERRORS.map((d) => d.code).sort());
    const exported = Object.values(otlp).filter((value) => OTLP_ERRORS.includes(value as never));
    expect(exported).toHaveLength(OTLP_ERRORS.length);
  });

  it('makes every otlp code a permanent 400', () => {
    for (const definition of OTLP_ERRORS) {
      expect(definition.code).toMatch(/^KS_OTLP_[A-Z0-9_]+$/);
      expect(definition.httpStatus).toBe(400);
      expect(definition.retryable).toBe(false);
    }
  });
});
