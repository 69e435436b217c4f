import { describe, expect, it } from 'vitest';
import { GATE_ERRORS } from '../src/errors.ts';
import * as gate from '../src/index.ts';
import { nodeScope } from './scopes.ts';

describe('gate error codes', () => {
  it('lists each KS_GATE_ code once in GATE_ERRORS, exported from the package', () => {
    const codes = GATE_ERRORS.map((definition) => definition.code);
    expect(new Set(codes).size).toBe(codes.length);
    expect(codes.every((code) => code.startsWith('KS_GATE_'))).toBe(true);
    expect(gate.GATE_ERRORS).toBe(GATE_ERRORS);
  });

  it('gives the startup codes no HTTP status: they answer no request', () => {
    const startup = GATE_ERRORS.filter((definition) => definition.kind === 'startup');
    expect(startup.map((definition) => definition.code).sort()).toEqual([
      'KS_GATE_CONFIG_INVALID',
      'KS_GATE_SCOPE_NOT_COVERED',
    ]);
    for (const definition of startup) expect(definition).not.toHaveProperty('httpStatus');
  });

  it('throws a startup refusal as an IdempotencyConfigError with a code and no HTTP semantics', () => {
    const refusals = [
      () => gate.verify(nodeScope({ retryScope: { level: 'cluster' } })),
      () => gate.verify(nodeScope({ keyScope: 'zone' as 'node' })),
    ];
    for (const refuse of refusals) {
      let thrown: unknown;
      try {
        refuse();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(gate.IdempotencyConfigError);
      expect(thrown).not.toBeInstanceOf(gate.IdempotencyRequestError);
      expect(thrown).not.toHaveProperty('httpStatus');
      expect(thrown).not.toHaveProperty('retryable');
    }
    expect(refusals[0]).toThrow(expect.objectContaining({ code: 'KS_GATE_SCOPE_NOT_COVERED' }));
    expect(refusals[1]).toThrow(expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' }));
  });
});
