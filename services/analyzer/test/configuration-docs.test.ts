import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { defaultServeConfig, resolveServeConfig } from '../src/config.ts';

const docs = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
const example = parse(/```yaml\n([\s\S]*?)```/.exec(docs)![1]!) as Record<string, unknown>;

describe('docs/configuration.md', () => {
  it('shows a configuration keyscope accepts', () => {
    expect(() => resolveServeConfig(example)).not.toThrow();
  });

  it('mentions every setting keyscope has', () => {
    const paths: string[] = [];
    const walk = (value: unknown, path: string[]) => {
      if (typeof value === 'object' && value !== null && !Array.isArray(value) && path[0] !== 'alerts') {
        for (const [key, child] of Object.entries(value)) walk(child, [...path, key]);
      } else paths.push(path.join('.'));
    };
    walk(defaultServeConfig(), []);
    const missing = paths.filter((path) => !new RegExp(`\\b${path.split('.').at(-1)}:`).test(docs));
    expect(missing).toEqual([]);
  });
});
