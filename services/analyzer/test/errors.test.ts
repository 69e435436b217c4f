import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ANALYZER_ERRORS } from '../src/errors.ts';
import { RECEIVER_REJECT_REASONS } from '../src/receivers/ingest-counters.ts';

function analyzerSection(): string {
  const text = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const start = text.indexOf('\n## analyzer');
  expect(start).toBeGreaterThanOrEqual(0);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

/** The table rows of a section as cells, whatever the column padding. */
function tableRows(section: string): string[][] {
  return section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

describe('analyzer error codes', () => {
  it('documents every code in the analyzer section of docs/errors.md with its HTTP status and retry flag', () => {
    const rows = tableRows(analyzerSection());
    for (const definition of ANALYZER_ERRORS) {
      const retry = definition.retryable ? 'retryable' : 'permanent';
      expect(rows).toContainEqual([
        `\`${definition.code}\``,
        String(definition.httpStatus),
        retry,
        expect.any(String),
      ]);
    }
  });

  it('documents every reason the ingest counters count under', () => {
    const section = analyzerSection();
    for (const reason of RECEIVER_REJECT_REASONS) expect(section).toContain(`\`${reason}\``);
  });

  it('declares only KS_ANALYZER_ codes', () => {
    for (const definition of ANALYZER_ERRORS) expect(definition.code).toMatch(/^KS_ANALYZER_[A-Z_]+$/);
  });
});
