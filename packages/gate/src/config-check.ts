import { GATE_CONFIG_INVALID, IdempotencyConfigError } from './errors.ts';

/**
 * Strict checks for configuration that may come from a file or the environment as well as from
 * typed code: unknown keys and invalid values stop startup with a message naming the field, in
 * keyscope's wording (`gate.ttlMillis must be a positive integer, received 0`).
 */
export function invalidConfig(path: string, expected: string, received: unknown): IdempotencyConfigError {
  return new IdempotencyConfigError(
    GATE_CONFIG_INVALID,
    `${path} must be ${expected}, received ${describeValue(received)}`,
  );
}

export function objectAt(value: unknown, path: string, known: readonly string[]): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidConfig(path, 'an object', value);
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new IdempotencyConfigError(
        GATE_CONFIG_INVALID,
        `'${path}' has an unknown key '${key}'; known keys: ${known.join(', ')}`,
      );
    }
  }
  return value as Record<string, unknown>;
}

export function oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidConfig(path, `one of ${allowed.join(', ')}`, value);
  }
  return value as T;
}

export function stringAt(value: unknown, path: string): string {
  if (typeof value !== 'string') throw invalidConfig(path, 'a string', value);
  return value;
}

export function nonEmptyStringAt(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw invalidConfig(path, 'a non-empty string', value);
  return value;
}

export function positiveIntegerAt(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidConfig(path, 'a positive integer', value);
  }
  return value;
}

/** Text quoted, numbers and booleans as written, containers by kind (they may be long, or secret). */
function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : String(value);
}
