import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';

describe('the test run', () => {
  it('gives every test process its own temporary folder, which the run deletes at its end', () => {
    const dir = process.env.SCRATCH_TMPDIR_OF_RUN;
    expect(dir).toMatch(/keyscope-test-[^/]+$/);
    expect(tmpdir()).toBe(dir);
  });
});
