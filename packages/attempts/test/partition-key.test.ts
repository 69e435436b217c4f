import { describe, expect, it } from 'vitest';
import { parseMapping } from '../src/mapping.ts';
import { partitionKey } from '../src/partition-key.ts';

describe('partition key', () => {
  it('is the key itself in the global namespace', () => {
    expect(partitionKey({ key: 'k1', tenant: 'acme' }, parseMapping({}))).toBe('k1');
  });

  it('is key, NUL, tenant in the tenant namespace', () => {
    const tenantScoped = parseMapping({ keyNamespace: 'tenant' });
    expect(partitionKey({ key: 'k1', tenant: 'acme' }, tenantScoped)).toBe('k1\u0000acme');
    expect(partitionKey({ key: 'k1', tenant: 'globex' }, tenantScoped)).not.toBe(
      partitionKey({ key: 'k1', tenant: 'acme' }, tenantScoped),
    );
  });

  it('keeps an unknown tenant distinct from every named one', () => {
    expect(partitionKey({ key: 'k1', tenant: '' }, parseMapping({ keyNamespace: 'tenant' }))).toBe(
      'k1\u0000',
    );
  });
});
