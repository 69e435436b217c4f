import { defineConfig } from 'vitest/config';

/**
 * Two projects, both run by `pnpm test`:
 * - `unit`: the pure stages under packages/, in memory or on loopback within the test's process;
 *   seconds (`pnpm test:unit`).
 * - `integration`: what starts processes or real peers — the service, the CLI, a real
 *   Alertmanager, librdkafka's mock cluster, Chromium, the real OpenTelemetry exporters, the bench
 *   harness (`pnpm test:integration`).
 */
const REAL_PEERS = ['packages/alerts/test/alertmanager-payload.test.ts'];

export default defineConfig({
  // Workspace packages that ship built JavaScript (packages/gate) point this condition at their
  // TypeScript sources, so tests run the sources without a build; the rest are vitest's defaults.
  ssr: { resolve: { conditions: ['@keyscope/source', 'node', 'development|production'] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Tests that start servers pick free ports (port 0); files may run in parallel.
    pool: 'forks',
    // Temporary files go under one folder of the run, deleted at its end.
    globalSetup: ['test/support/scratch-tmpdir.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['packages/*/test/**/*.test.ts'], exclude: REAL_PEERS },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: [
            ...REAL_PEERS,
            'services/*/test/**/*.test.ts',
            'test/**/*.test.ts',
            'bench/test/**/*.test.ts',
          ],
        },
      },
    ],
  },
});
