import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, executedTwice, startConfigured, until } from './configured-keyscope.ts';

const DAY = 24 * 60 * 60 * 1000;

describe('retention.*', () => {
  let keyscope: ConfiguredKeyscope;
  let clock = Date.now();
  beforeAll(async () => {
    keyscope = await startConfigured(
      { env: { KEYSCOPE_RETENTION_FINDINGS_DAYS: '2' } },
      { now: () => clock },
    );
  });
  afterAll(() => keyscope.stop());

  async function findingKeys(): Promise<string[]> {
    const answer = (await (await fetch(keyscope.apiUrl('/api/v1/findings'))).json()) as {
      items: Array<{ key: string }>;
    };
    return answer.items.map((finding) => finding.key).sort();
  }

  it('retention.findingsDays: a finding older than two days is purged when set to two, a newer one kept', async () => {
    const start = clock;
    expect(
      (await keyscope.exportSpans(executedTwice('old-key', { startMillis: start - 60_000 }))).status,
    ).toBe(200);
    // Two and a half days later (the default keeps findings 30 days).
    clock = start + 2.5 * DAY;
    expect(
      (await keyscope.exportSpans(executedTwice('new-key', { startMillis: clock - 60_000 }))).status,
    ).toBe(200);
    expect(await findingKeys()).toEqual(['new-key', 'old-key']);
    // Retention runs every 10 s.
    await until(async () => (await findingKeys()).length === 1, 15_000);
    expect(await findingKeys()).toEqual(['new-key']);
  });
});
