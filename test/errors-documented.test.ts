import { readFileSync } from 'node:fs';
import { declaredErrors, type ErrorDefinition } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { ALERTS_ERRORS } from '../packages/alerts/src/errors.ts';
import { ATTEMPTS_ERRORS } from '../packages/attempts/src/errors.ts';
import { GATE_ERRORS } from '../packages/gate/src/errors.ts';
import { OTLP_ERRORS } from '../packages/otlp/src/errors.ts';
import { STORE_ERRORS } from '../packages/store/src/errors.ts';
import { ANALYZE_ERRORS } from '../services/analyzer/src/analyze/analyze-errors.ts';
import { API_ERRORS } from '../services/analyzer/src/api/api-errors.ts';
import { ANALYZER_ERRORS } from '../services/analyzer/src/errors.ts';
import { KAFKA_ERRORS } from '../services/analyzer/src/kafka/kafka-errors.ts';
import { RECEIVER_REJECT_REASONS } from '../services/analyzer/src/receivers/ingest-counters.ts';

/**
 * docs/errors.md is the reference for every error code: each package's codes are listed in the
 * package's section, with the HTTP status and whether the sender should retry, in one table format
 * (`| code | HTTP | retry | meaning |`, retry being `retryable` or `permanent`).
 */
const docs = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8');

/** The text of the `## name` section. */
function section(name: string): string {
  const start = docs.indexOf(`\n## ${name}\n`);
  expect(start, `docs/errors.md has a "## ${name}" section`).toBeGreaterThanOrEqual(0);
  const next = docs.indexOf('\n## ', start + 1);
  return docs.slice(start, next < 0 ? undefined : next);
}

/** Table rows as trimmed cells (without the empty ones outside the outer pipes), by code cell. */
function rowsByCode(text: string): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
    rows.set(cells[0]!, cells);
  }
  return rows;
}

/** A code as its section lists it: a startup code (the gate's) answers no request, so it has no HTTP status. */
type DocumentedCode = Pick<ErrorDefinition, 'code' | 'retryable'> & { readonly httpStatus?: number };

const SECTIONS: Record<string, readonly DocumentedCode[]> = {
  otlp: OTLP_ERRORS,
  attempts: ATTEMPTS_ERRORS,
  gate: GATE_ERRORS,
  analyzer: [...ANALYZER_ERRORS, ...ANALYZE_ERRORS, ...KAFKA_ERRORS, ...API_ERRORS],
  store: STORE_ERRORS,
  alerts: ALERTS_ERRORS,
};

describe('docs/errors.md', () => {
  for (const [name, definitions] of Object.entries(SECTIONS)) {
    it(`documents exactly the ${name} codes in its section, with their HTTP status and retry`, () => {
      const rows = rowsByCode(section(name));
      for (const definition of definitions) {
        expect(rows.get(`\`${definition.code}\``)?.slice(0, 3), definition.code).toEqual([
          `\`${definition.code}\``,
          definition.httpStatus === undefined ? '—' : String(definition.httpStatus),
          definition.retryable ? 'retryable' : 'permanent',
        ]);
      }
      // And nothing else: a code no package declares any more is not documented either.
      const documented = [...rows.keys()].filter((cell) => cell.startsWith('`KS_'));
      expect(documented.sort()).toEqual(definitions.map((d) => `\`${d.code}\``).sort());
    });
  }

  it('leaves no declared code out of the sections above', async () => {
    // The registry is filled at import: import every package that declares codes.
    await Promise.all([
      import('@keyscope/otlp'),
      import('@keyscope/attempts'),
      import('@keyscope/store'),
      import('@keyscope/alerts'),
      import('@keyscope/gate'),
      import('@keyscope/analyzer'),
    ]);
    const listed = new Set(Object.values(SECTIONS).flatMap((definitions) => definitions.map((d) => d.code)));
    expect(declaredErrors().length).toBeGreaterThan(20);
    expect(declaredErrors().filter((definition) => !listed.has(definition.code))).toEqual([]);
  });

  it('documents every reason the receivers and the Kafka roles count a rejected payload or record under', () => {
    const analyzer = section('analyzer');
    for (const reason of [
      ...RECEIVER_REJECT_REASONS,
      'empty_value',
      'internal_error',
      'KS_KAFKA_RECORD_INVALID',
    ])
      expect(analyzer).toContain(`\`${reason}\``);
  });
});
