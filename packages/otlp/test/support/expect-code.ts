import type { ErrorDefinition } from '@keyscope/errors';
import { isKeyscopeError } from '@keyscope/errors';
import { expect } from 'vitest';

/** Asserts that `run` throws a KeyscopeError with `definition`'s code (never another type). */
export function expectCode(run: () => unknown, definition: ErrorDefinition): void {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown, 'expected a KeyscopeError').toBeDefined();
  expect(isKeyscopeError(thrown) ? thrown.code : thrown).toBe(definition.code);
}
