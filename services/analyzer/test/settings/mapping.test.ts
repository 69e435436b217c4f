import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, executedTwice, startConfigured } from './configured-keyscope.ts';

describe('mapping.*', () => {
  let keyscope: ConfiguredKeyscope;
  beforeAll(async () => {
    keyscope = await startConfigured((dir) => {
      const file = join(dir, 'mapping.yaml');
      writeFileSync(file, 'fields:\n  key: [payment.idempotency_key]\n');
      return { file: { mapping: { file } } };
    });
  });
  afterAll(() => keyscope.stop());

  it('mapping.file: keys are read from the attribute the mapping file names', async () => {
    // Under the default mapping these spans carry no key: nothing would be found.
    const spans = executedTwice('mapped-key').map((span) => {
      const { 'idempotency.key': key, ...rest } = span.attributes;
      return { ...span, attributes: { ...rest, 'payment.idempotency_key': key! } };
    });
    expect((await keyscope.exportSpans(spans)).status).toBe(200);
    const findings = (await (await fetch(keyscope.apiUrl('/api/v1/findings'))).json()) as {
      items: Array<{ key: string }>;
    };
    expect(findings.items.map((finding) => finding.key)).toEqual(['mapped-key']);
  });
});
