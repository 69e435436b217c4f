import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * bench/'s own tests (`npx vitest run --config bench/vitest.config.ts`): the root config's
 * `include` does not list bench/ yet.
 */
export default defineConfig({
  // Patterns are relative to the root, which is the working directory unless set here.
  root: fileURLToPath(new URL('.', import.meta.url)),
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
