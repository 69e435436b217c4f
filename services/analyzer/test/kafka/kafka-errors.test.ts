import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KAFKA_ERRORS } from '../../src/kafka/kafka-errors.ts';

function analyzerSection(): string {
  const text = readFileSync(new URL('../../../../docs/errors.md', import.meta.url), 'utf8');
  const start = text.indexOf('\n## analyzer');
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

describe('Kafka error codes', () => {
  it('documents every code in the analyzer section of docs/errors.md with its HTTP status and retry flag', () => {
    const rows = analyzerSection()
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    for (const definition of KAFKA_ERRORS) {
      expect(rows).toContainEqual([
        `\`${definition.code}\``,
        String(definition.httpStatus),
        definition.retryable ? 'retryable' : 'permanent',
        expect.any(String),
      ]);
    }
  });

  it('documents every reason a skipped record is counted under', () => {
    for (const reason of ['empty_value', 'internal_error', 'KS_KAFKA_RECORD_INVALID'])
      expect(analyzerSection()).toContain(`\`${reason}\``);
  });

  it('declares only KS_KAFKA_ codes', () => {
    for (const definition of KAFKA_ERRORS) expect(definition.code).toMatch(/^KS_KAFKA_[A-Z_]+$/);
  });
});
