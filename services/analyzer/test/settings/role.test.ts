import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, startConfigured } from './configured-keyscope.ts';

let cluster: KafkaCluster;
let keyscope: ConfiguredKeyscope;

beforeAll(async () => {
  cluster = await startKafkaCluster({ traces: 1, attempts: 2 });
  keyscope = await startConfigured({
    flags: ['--role', 'ingest'],
    env: { KEYSCOPE_KAFKA_BROKERS: cluster.brokers.join(',') },
    file: {
      kafka: {
        traces: { topic: cluster.topic('traces'), groupId: cluster.group('ingest') },
        attempts: { topic: cluster.topic('attempts') },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await keyscope?.stop();
  await cluster?.stop();
}, 60_000);

describe('role', () => {
  it('role: --role ingest runs the receivers and no detector, store or findings API', async () => {
    expect(keyscope.running.ingest).toBeDefined();
    expect(keyscope.running.detect).toBeUndefined();
    expect(keyscope.running.serve).toBeUndefined();
    expect(keyscope.running.embedded).toBeUndefined();
    expect((await fetch(keyscope.apiUrl('/healthz'))).status).toBe(200);
    // `all`, the default, would answer it.
    expect((await fetch(keyscope.apiUrl('/api/v1/findings'))).status).toBe(404);
  });
});
