import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

/**
 * Words of a development diary: the product's docs, comments, test names and bench output say what
 * keyscope is and does, and git keeps how it got there. Each pattern names one way history leaks
 * into the tree: work sessions, tracker issues, commit hashes cited as versions, and "used to …"
 * narration.
 */
const DIARY_PATTERNS: readonly { name: string; pattern: RegExp }[] = [
  { name: 'a work session', pattern: /\b(?:in|since|until|before|after|of) sessions?\b|\bsessions? \d+\b/i },
  { name: 'a tracker issue', pattern: /\bthe issue(?:'s)?\b|\bissues? #?\d+\b/i },
  { name: 'a commit cited as a version', pattern: /\bHEAD [0-9a-f]{7,40}\b|\bcommit [0-9a-f]{7,40}\b/ },
  {
    name: 'narrated history',
    pattern: /\bused to (?!detect|tell|find|group|decide|pick|build|derive)\w+|\bfirst form\b/i,
  },
];

/** Text files git tracks, this test's own file aside (its patterns spell the words they look for). */
function trackedTextFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  return listed
    .split('\0')
    .filter((path) => /\.(?:ts|js|mjs|md|json|ya?ml|sh|c|html|css)$/.test(path))
    .filter((path) => path !== 'test/product-voice.test.ts' && path !== 'pnpm-lock.yaml');
}

describe('the tree speaks of the product, not of its history', () => {
  it('finds the files it reads', () => {
    const files = trackedTextFiles();
    expect(files).toContain('README.md');
    expect(files).toContain('docs/performance.md');
    expect(files.some((path) => path.startsWith('bench/sections/'))).toBe(true);
  });

  it.each(DIARY_PATTERNS)('has no mention of $name in docs, code, tests or bench output', ({ pattern }) => {
    const hits: string[] = [];
    for (const path of trackedTextFiles()) {
      const lines = readFileSync(join(ROOT, path), 'utf8').split('\n');
      lines.forEach((line, index) => {
        if (pattern.test(line)) hits.push(`${path}:${index + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(hits).toEqual([]);
  });

  it('recognises each pattern in a diary line', () => {
    // Assembled from words, so that the tree itself holds no diary line, this file included.
    const diary = [
      ['What changed in', 'session', '10'],
      ['as first written in the', 'issue'],
      ['a run at', 'HEAD', '0123abc'],
      ['the tally', 'used to', 'walk all of its findings'],
    ].map((words) => words.join(' '));
    DIARY_PATTERNS.forEach(({ pattern }, index) => {
      expect(pattern.test(diary[index]!)).toBe(true);
    });
  });
});
