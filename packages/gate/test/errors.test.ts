import { declaredErrors } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { GATE_ERRORS } from '../src/errors.ts';
import * as gate from '../src/index.ts';

describe('gate error codes', () => {
  it('lists every declared KS_GATE_ code in GATE_ERRORS, exported from the package', () => {
    const declared = declaredErrors().filter((definition) => definition.code.startsWith('KS_GATE_'));
    expect(declared.map((d) => d.code).sort()).toEqual(GATE_ERRORS.map((d) => d.code).sort());
    expect(gate.GATE_ERRORS).toBe(GATE_ERRORS);
  });
});
