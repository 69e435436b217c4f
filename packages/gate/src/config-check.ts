import {
  type ConfigRules,
  oneOf as choice,
  fieldPath,
  integer,
  type KeyscopeError,
  text,
} from '@keyscope/errors';
import { GATE_CONFIG_INVALID } from './errors.ts';

/**
 * Strict checks for configuration that may come from a file or the environment as well as from
 * typed code: unknown keys and invalid values stop startup with a message naming the field.
 */
const GATE_CONFIG: ConfigRules = { errors: GATE_CONFIG_INVALID, objects: 'object' };

const STRING = text({ required: true });
const NON_EMPTY_STRING = text({ required: true, nonEmpty: true });
const POSITIVE_INTEGER = integer({ required: true });

export function invalidConfig(path: string, expected: string, received: unknown): KeyscopeError {
  return fieldPath(GATE_CONFIG, path).invalid(expected, received);
}

export function objectAt(value: unknown, path: string, known: readonly string[]): Record<string, unknown> {
  return fieldPath(GATE_CONFIG, path).object(value, known);
}

export function oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T {
  return choice(allowed, { required: true }).check(value, fieldPath(GATE_CONFIG, path), undefined);
}

export function stringAt(value: unknown, path: string): string {
  return STRING.check(value, fieldPath(GATE_CONFIG, path), undefined);
}

export function nonEmptyStringAt(value: unknown, path: string): string {
  return NON_EMPTY_STRING.check(value, fieldPath(GATE_CONFIG, path), undefined);
}

export function positiveIntegerAt(value: unknown, path: string): number {
  return POSITIVE_INTEGER.check(value, fieldPath(GATE_CONFIG, path), undefined);
}
