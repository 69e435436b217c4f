import { readFileSync } from 'node:fs';
import { ADVICE_SENTENCES } from '@keyscope/detector';
import { describe, expect, it } from 'vitest';

/**
 * docs/incidents.md explains each sentence an incident's advice can contain and the fact that
 * selects it, in the order the advice says them: its table lists the ids of `ADVICE_SENTENCES`
 * (and the severity reasons' `reason_…` sentences before them), no more and no fewer.
 */
const docs = readFileSync(new URL('../docs/incidents.md', import.meta.url), 'utf8');

function documentedIds(): string[] {
  const start = docs.indexOf('\n## The advice, sentence by sentence\n');
  expect(start, 'docs/incidents.md has a "## The advice, sentence by sentence" section').toBeGreaterThan(0);
  const end = docs.indexOf('\n## ', start + 1);
  const ids: string[] = [];
  for (const line of docs.slice(start, end).split('\n')) {
    const match = /^\| `([a-z_]+)` \|/.exec(line);
    if (match !== null) ids.push(match[1]!);
  }
  return ids;
}

describe('the advice sentences in docs/incidents.md', () => {
  it('lists every sentence the advice can say, in the order it says them', () => {
    expect(documentedIds().filter((id) => !id.startsWith('reason_'))).toEqual(
      ADVICE_SENTENCES.map((rule) => rule.id),
    );
  });
});
