import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALERTS_ERRORS } from '../src/errors.ts';

function alertsSection(): string {
  const text = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const start = text.indexOf('\n## alerts');
  expect(start).toBeGreaterThanOrEqual(0);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

describe('alerts error codes', () => {
  it('documents every code in the alerts section of docs/errors.md with its HTTP status', () => {
    const rows = alertsSection()
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    for (const definition of ALERTS_ERRORS) {
      const row = rows.find((cells) => cells[1] === `\`${definition.code}\``);
      expect(row, definition.code).toBeDefined();
      expect(row![2]).toBe(String(definition.httpStatus));
      expect(row![3]).toBe(definition.retryable ? 'yes' : 'no');
    }
  });

  it('declares only permanent KS_ALERTS_ codes', () => {
    for (const definition of ALERTS_ERRORS) {
      expect(definition.code).toMatch(/^KS_ALERTS_[A-Z_]+$/);
      expect(definition.retryable).toBe(false);
    }
  });
});
