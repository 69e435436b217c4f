import type { ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnUnderSdk } from '../support/sdk-process.ts';
import type { DecisionSpan, StoreScope } from './scenarios.ts';

/**
 * Starting the lab's Node processes (payments nodes, the checkout client); waiting for them and
 * their ports are test/support/sdk-process.ts's.
 */
const HERE = dirname(fileURLToPath(import.meta.url));

/** Every lab process started and not yet exited: whoever started them kills what is left. */
export const children = new Set<ChildProcess>();

/** What a payments node reads from its environment. */
export interface PaymentsNodeSettings {
  readonly name: string;
  readonly port: number;
  readonly ledgerPath: string;
  readonly ttlMillis: number;
  readonly otlpUrl: string;
  /** Default `node`: a memory store of its own. */
  readonly storeScope?: StoreScope;
  /** A cluster store's SQLite file, and the one store id every node of the cluster records. */
  readonly storePath?: string;
  readonly storeId?: string;
  /** Default `server`. */
  readonly decisionSpan?: DecisionSpan;
}

export function paymentsNodeEnv(settings: PaymentsNodeSettings): Record<string, string> {
  return {
    LAB_PORT: String(settings.port),
    LAB_LEDGER: settings.ledgerPath,
    LAB_TTL_MILLIS: String(settings.ttlMillis),
    LAB_OTLP_URL: settings.otlpUrl,
    LAB_STORE_SCOPE: settings.storeScope ?? 'node',
    LAB_STORE_PATH: settings.storePath ?? '',
    LAB_STORE_ID: settings.storeId ?? '',
    LAB_DECISION_SPAN: settings.decisionSpan ?? 'server',
    LAB_RESOURCE: JSON.stringify({
      'service.name': 'payments',
      'service.instance.id': settings.name,
      'k8s.cluster.name': 'lab',
      'cloud.region': 'local',
    }),
  };
}

/** `script` (a file of this folder) under the lab's SDK, with an IPC channel and its stdout piped. */
export function labProcess(script: string, env: Record<string, string>): ChildProcess {
  const child = spawnUnderSdk(join(HERE, 'instrumentation.ts'), join(HERE, script), { env, stdout: 'pipe' });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}
