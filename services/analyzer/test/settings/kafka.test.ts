import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isKeyscopeError } from '@keyscope/errors';
import { encodeTracesJson } from '@keyscope/otlp';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import type { Admin, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaClient } from '../../src/kafka/kafka-client.ts';
import { silentLogger } from '../../src/logger.ts';
import {
  type ConfiguredKeyscope,
  executedTwice,
  type Settings,
  startConfigured,
  until,
} from './configured-keyscope.ts';
import { damagedDatabase } from './damaged-database.ts';
import { CREATE_TOPICS, type KafkaRelay, readString, startKafkaRelay } from './kafka-relay.ts';

let cluster: KafkaCluster;
let admin: Admin;
let producer: Producer;
let keyscope: ConfiguredKeyscope;
let stateDir = '';

/** The scaled mode's settings on this run's topics, brokers from KEYSCOPE_KAFKA_BROKERS. */
function kafkaSettings(dir: string, kafka: Record<string, unknown> = {}): Settings {
  return {
    env: { KEYSCOPE_KAFKA_BROKERS: cluster.brokers.join(',') },
    file: {
      kafka: {
        clientId: 'settings-keyscope',
        traces: { topic: cluster.topic('traces'), encoding: 'otlp_json', groupId: cluster.group('ingest') },
        attempts: { topic: cluster.topic('attempts'), groupId: cluster.group('detect') },
        incidents: { topic: cluster.topic('incidents') },
        deadLetter: { topic: cluster.topic('dead') },
        stateDir: join(dir, 'detect-state'),
        ...kafka,
      },
    },
  };
}

async function messagesIn(topic: string): Promise<number> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.reduce((sum, partition) => sum + Number(partition.high) - Number(partition.low), 0);
}

async function findingKeys(): Promise<string[]> {
  const findings = await keyscope.json<{ items: Array<{ key: string }> }>('/api/v1/findings');
  return findings.items.map((finding) => finding.key).sort();
}

beforeAll(async () => {
  cluster = await startKafkaCluster({ traces: 2, attempts: 4, incidents: 2, dead: 1 });
  const kafka = createKafkaClient(
    { brokers: cluster.brokers, clientId: 'settings-test' },
    'test',
    silentLogger,
  );
  admin = kafka.admin();
  await admin.connect();
  producer = kafka.producer();
  await producer.connect();
  keyscope = await startConfigured((dir) => {
    stateDir = join(dir, 'detect-state');
    return kafkaSettings(dir);
  });
  // Over OTLP to the ingest role, and as the Collector writes the traces topic (OTLP/JSON here).
  expect((await keyscope.exportSpans(executedTwice('over-otlp'))).status).toBe(200);
  await producer.send({
    topic: cluster.topic('traces'),
    messages: [{ value: JSON.stringify(encodeTracesJson(executedTwice('from-the-topic'))) }],
  });
  await producer.send({ topic: cluster.topic('traces'), messages: [{ value: 'not OTLP at all' }] });
  await until(async () => (await findingKeys()).length === 2, 30_000);
}, 90_000);

afterAll(async () => {
  await keyscope?.stop();
  await producer?.disconnect();
  await admin?.disconnect();
  await cluster?.stop();
}, 60_000);

describe('kafka.* on a mock Kafka cluster', () => {
  it('kafka.brokers: the roles talk through the configured cluster, from OTLP to the findings', async () => {
    expect(keyscope.running.counters).toBeDefined();
    expect(await findingKeys()).toContain('over-otlp');
  });

  it('kafka.traces.topic: spans the Collector writes to the configured topic are judged', async () => {
    expect(await findingKeys()).toContain('from-the-topic');
  });

  it('kafka.traces.encoding: set to otlp_json, a JSON message is read (otlp_proto would dead-letter it)', async () => {
    expect(await findingKeys()).toEqual(['from-the-topic', 'over-otlp']);
    // Only the record that is no OTLP at all was unreadable.
    await until(async () => (await messagesIn(cluster.topic('dead'))) === 1, 10_000);
  });

  it('kafka.deadLetter.topic: an unreadable traces record is copied to the configured topic', async () => {
    await until(async () => (await messagesIn(cluster.topic('dead'))) > 0, 10_000);
  });

  it('kafka.attempts.topic: attempts are written to the configured topic', async () => {
    expect(await messagesIn(cluster.topic('attempts'))).toBeGreaterThan(0);
  });

  it('kafka.incidents.topic: findings and incidents are written to the configured topic', async () => {
    expect(await messagesIn(cluster.topic('incidents'))).toBeGreaterThan(0);
  });

  /** Whether `groupId` committed an offset past the start of one of `topic`'s partitions. */
  async function committed(groupId: string, topic: string): Promise<boolean> {
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return offsets!.partitions.some((partition) => Number(partition.offset) > 0);
  }

  it('kafka.traces.groupId: the ingest role commits its reading of the traces topic in the configured group', async () => {
    await until(() => committed(cluster.group('ingest'), cluster.topic('traces')), 10_000);
  });

  it('kafka.attempts.groupId: the detect role commits its reading of the attempts topic in the configured group', async () => {
    await until(() => committed(cluster.group('detect'), cluster.topic('attempts')), 10_000);
  });

  it('kafka.stateDir: the detect role keeps its partitions’ SQLite files in the configured folder', async () => {
    expect(readdirSync(stateDir).some((name) => name.endsWith('.db'))).toBe(true);
  });
});

describe('kafka.* topic creation (the mock broker refuses CreateTopics)', () => {
  /** Why a keyscope whose attempts topic is missing did not start. */
  async function refusal(kafka: Record<string, unknown>): Promise<{ code: string; message: string }> {
    const missing = {
      attempts: { topic: cluster.topic('missing-attempts'), groupId: cluster.group('x'), partitions: 7 },
    };
    const error = await startConfigured((dir) => kafkaSettings(dir, { ...missing, ...kafka })).then(
      async (started) => {
        await started.stop();
        return undefined;
      },
      (thrown: unknown) => thrown,
    );
    if (!isKeyscopeError(error)) throw new Error(`expected a keyscope error, received ${String(error)}`);
    return { code: error.code, message: error.message };
  }

  it('kafka.createTopics: false stops startup on a missing topic without trying to create it', async () => {
    const refused = await refusal({ createTopics: false });
    expect(refused.code).toBe('KS_KAFKA_TOPIC_MISSING');
    expect(refused.message).toContain('kafka.createTopics is false');
    // Left at true, keyscope asks the broker to create it (and says the broker refused).
    expect((await refusal({})).message).toContain('could not be created');
  });

  it('kafka.attempts.partitions: a topic keyscope creates is asked for with that many partitions', async () => {
    expect((await refusal({})).message).toContain('create it with 7 partitions');
  });

  it('kafka.incidents.partitions: the incidents topic is asked for with that many partitions', async () => {
    const refused = await refusal({
      attempts: { topic: cluster.topic('attempts'), groupId: cluster.group('x2') },
      incidents: { topic: cluster.topic('missing-incidents'), partitions: 5 },
    });
    expect(refused.message).toContain(cluster.topic('missing-incidents'));
    expect(refused.message).toContain('create it with 5 partitions');
  });
});

describe('kafka.* on the wire, through a relay that records the requests', () => {
  let relay: KafkaRelay;

  beforeAll(async () => {
    relay = await startKafkaRelay(cluster.brokers[0]!, { offerCreateTopics: true });
  });
  afterAll(() => relay?.stop());

  /** Starts keyscope through the relay with its attempts topic missing; resolves with its refusal. */
  async function refusedThroughRelay(kafka: Record<string, unknown>): Promise<string> {
    const error = await startConfigured((dir) => {
      const settings = kafkaSettings(dir, {
        attempts: { topic: cluster.topic('wire-attempts'), groupId: cluster.group('wire') },
        ...kafka,
      });
      return { ...settings, env: { KEYSCOPE_KAFKA_BROKERS: relay.address } };
    }).then(
      async (started) => {
        await started.stop();
        return undefined;
      },
      (thrown: unknown) => thrown,
    );
    if (!isKeyscopeError(error)) throw new Error(`expected a keyscope error, received ${String(error)}`);
    return error.message;
  }

  it('kafka.clientId: every request keyscope sends names the configured client id and its role', async () => {
    relay.requests.length = 0;
    await refusedThroughRelay({ clientId: 'wire-keyscope' });
    const clientIds = new Set(relay.requests.map((request) => request.clientId));
    expect(relay.requests.length).toBeGreaterThan(0);
    for (const clientId of clientIds) expect(clientId).toMatch(/^wire-keyscope-[a-z]+$/);
  });

  it('kafka.replicationFactor: a topic keyscope creates is asked for with that many replicas', async () => {
    relay.requests.length = 0;
    const refused = await refusedThroughRelay({ replicationFactor: 3 });
    expect(refused).toContain('could not be created');
    const creations = relay.requests.filter((request) => request.apiKey === CREATE_TOPICS);
    expect(creations.length).toBeGreaterThan(0);
    for (const creation of creations) {
      // The first topic of the request: its name, then int32 partitions and int16 replication factor.
      expect(creation.body.readInt32BE(0)).toBe(1);
      const [name, offset] = readString(creation.body, 4);
      expect(name).toBe(cluster.topic('wire-attempts'));
      expect(creation.body.readInt32BE(offset)).toBe(12);
      expect(creation.body.readInt16BE(offset + 4)).toBe(3);
    }
  });
});

describe('kafka.sessionTimeoutMillis with two detect members', () => {
  const SESSION_MILLIS = 6_000;
  const repositoryRoot = fileURLToPath(new URL('../../../../', import.meta.url));
  let frozen: ChildProcess | undefined;
  let frozenDir = '';
  let member: ConfiguredKeyscope | undefined;

  afterAll(async () => {
    frozen?.kill('SIGKILL');
    await member?.stop();
    if (frozenDir !== '') rmSync(frozenDir, { recursive: true, force: true });
  }, 30_000);

  /** `keyscope serve --role detect` as a child process, configured by KEYSCOPE_* variables only. */
  async function startDetectProcess(groupId: string): Promise<ChildProcess> {
    frozenDir = mkdtempSync(join(tmpdir(), 'keyscope-settings-'));
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'services/analyzer/src/cli.ts', 'serve', '--role', 'detect', '--api-port', '0'],
      {
        cwd: repositoryRoot,
        env: {
          PATH: process.env.PATH,
          KEYSCOPE_KAFKA_BROKERS: cluster.brokers.join(','),
          KEYSCOPE_KAFKA_TRACES_TOPIC: cluster.topic('traces'),
          KEYSCOPE_KAFKA_ATTEMPTS_TOPIC: cluster.topic('attempts'),
          KEYSCOPE_KAFKA_ATTEMPTS_GROUP_ID: groupId,
          KEYSCOPE_KAFKA_INCIDENTS_TOPIC: cluster.topic('incidents'),
          KEYSCOPE_KAFKA_STATE_DIR: join(frozenDir, 'detect-state'),
          KEYSCOPE_KAFKA_SESSION_TIMEOUT_MILLIS: String(SESSION_MILLIS),
          KEYSCOPE_DB_PATH: join(frozenDir, 'keyscope.db'),
        },
      },
    );
    let output = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    await until(() => {
      if (child.exitCode !== null) throw new Error(`the detect process exited: ${output}`);
      return /^detect consuming /m.test(output);
    }, 30_000);
    return child;
  }

  it('kafka.sessionTimeoutMillis: a frozen member’s partitions move to the other member after about that long', async () => {
    const groupId = cluster.group('session');
    frozen = await startDetectProcess(groupId);
    member = await startConfigured((dir) => {
      const settings = kafkaSettings(dir, {
        attempts: { topic: cluster.topic('attempts'), groupId },
        sessionTimeoutMillis: SESSION_MILLIS,
      });
      return { ...settings, flags: ['--role', 'detect'] };
    });
    const owned = () => member!.running.counters!.partitionsOwned;
    // The four attempts partitions split between the two members, and stay split (the mock's
    // SyncGroup race may restart a member once).
    await until(() => owned() === 2, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await until(() => owned() === 2, 30_000);

    frozen.kill('SIGSTOP');
    const frozenAt = Date.now();
    await until(() => owned() === 4, 20_000);
    const movedAfter = Date.now() - frozenAt;
    // The broker drops the frozen member one timeout after its last heartbeat (at most a third of
    // a timeout before it froze, checked each second); the mock broker then waits a timeout less a
    // second for members to rejoin before it assigns. Under the default of 30 s that is a minute.
    expect(movedAfter).toBeGreaterThanOrEqual(SESSION_MILLIS);
    expect(movedAfter).toBeLessThan(2 * SESSION_MILLIS + 5_000);
  }, 90_000);
});

describe('db.* in the serve role', () => {
  it('db.integrityCheck: the serve role refuses a damaged database under quick, and opens it under off', async () => {
    const serveRole = (integrityCheck: string) => (dir: string) => {
      const path = join(dir, 'serve.db');
      damagedDatabase(path);
      const settings = kafkaSettings(dir);
      return {
        ...settings,
        flags: ['--role', 'serve'],
        file: { ...settings.file, db: { path, integrityCheck } },
      };
    };
    const refused = await startConfigured(serveRole('quick')).then(
      async (started) => {
        await started.stop();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(isKeyscopeError(refused) && refused.code).toBe('KS_STORE_CORRUPT');
    const opened = await startConfigured(serveRole('off'));
    try {
      expect(opened.running.serve).toBeDefined();
    } finally {
      await opened.stop();
    }
  });
});
