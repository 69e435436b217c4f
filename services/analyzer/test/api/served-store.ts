import type { Attempt, NodeActivity } from '@keyscope/attempts';
import { createDetector, type Detector } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import type { FastifyInstance } from 'fastify';
import type { ApiDependencies } from '../../src/api/api-server.ts';
import { createApiWithPage } from '../../src/api-with-alerts.ts';
import type { ApiToken } from '../../src/auth/auth.ts';

/** A real in-memory store and detector behind a real API server, fed attempts directly. */
export interface ServedStore {
  store: KeyscopeStore;
  detector: Detector;
  ingest(attempts: Attempt[], activity?: NodeActivity[]): void;
  api(tokens?: ApiToken[], options?: Partial<ApiDependencies>): FastifyInstance;
  close(): void;
}

export function createServedStore(): ServedStore {
  const store = new KeyscopeStore({ path: ':memory:' });
  const detector = createDetector(undefined, { attemptLog: store.attemptLog });
  return {
    store,
    detector,
    ingest(attempts, activity = []) {
      store.transaction(() => {
        store.applyChanges(
          detector.ingest({ attempts, activity, invalid: { outcome: 0, hit: 0, scope: 0 } }),
        );
        store.applyChanges(detector.flush());
      });
    },
    api(tokens = [], options = {}) {
      return createApiWithPage({
        traceLinkTemplate: '',
        store,
        detector: () => detector,
        tokens,
        metrics: async () => 'keyscope_up 1\n',
        ready: () => true,
        now: () => Date.UTC(2026, 0, 2),
        ...options,
      });
    },
    close: () => store.close(),
  };
}
