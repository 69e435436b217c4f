import { isKeyscopeError } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { defaultServeConfig, envOverrides, resolveServeConfig } from '../../src/config.ts';
import { startRoles } from '../../src/kafka/start-roles.ts';
import { silentLogger } from '../../src/logger.ts';

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (isKeyscopeError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

describe('the role and kafka settings', () => {
  it('default to the embedded service, with the Collector exporter topic and encoding', () => {
    const config = defaultServeConfig();
    expect(config.role).toBe('all');
    expect(config.kafka).toMatchObject({
      brokers: [],
      traces: { topic: 'otlp_spans', encoding: 'otlp_proto' },
      attempts: { topic: 'keyscope_attempts' },
      incidents: { topic: 'keyscope_incidents' },
      deadLetter: { topic: '' },
    });
  });

  it('come from KEYSCOPE_* variables, brokers as a comma-separated list', () => {
    const config = resolveServeConfig(
      envOverrides({
        KEYSCOPE_ROLE: 'detect',
        KEYSCOPE_KAFKA_BROKERS: 'kafka-1:9092, kafka-2:9092',
        KEYSCOPE_KAFKA_TRACES_ENCODING: 'otlp_json',
        KEYSCOPE_KAFKA_ATTEMPTS_PARTITIONS: '24',
        KEYSCOPE_KAFKA_DEAD_LETTER_TOPIC: '',
        KEYSCOPE_KAFKA_INCIDENTS_TOPIC: '2024',
        KEYSCOPE_KAFKA_STATE_DIR: '/var/lib/keyscope',
      }),
    );
    expect(config.role).toBe('detect');
    expect(config.kafka.brokers).toEqual(['kafka-1:9092', 'kafka-2:9092']);
    expect(config.kafka.traces.encoding).toBe('otlp_json');
    expect(config.kafka.attempts.partitions).toBe(24);
    expect(config.kafka.deadLetter.topic).toBe('');
    // A topic name that reads as a number stays a name.
    expect(config.kafka.incidents.topic).toBe('2024');
    expect(config.kafka.stateDir).toBe('/var/lib/keyscope');
  });

  it('refuse an unknown role, encoding, broker address or topic name, naming the field', () => {
    expect(refusal(() => resolveServeConfig({ role: 'ingester' }))).toMatch(
      /^KS_ANALYZER_CONFIG_INVALID: role must be one of all, ingest, detect, serve/,
    );
    expect(refusal(() => resolveServeConfig({ kafka: { traces: { encoding: 'jaeger_proto' } } }))).toMatch(
      /kafka\.traces\.encoding must be one of otlp_proto, otlp_json/,
    );
    expect(refusal(() => resolveServeConfig({ kafka: { brokers: ['kafka'] } }))).toMatch(
      /kafka\.brokers\[0\] must be host:port/,
    );
    expect(refusal(() => resolveServeConfig({ kafka: { attempts: { topic: 'has space' } } }))).toMatch(
      /kafka\.attempts\.topic must be a Kafka topic name/,
    );
    expect(refusal(() => resolveServeConfig({ kafka: { attempts: { topic: '' } } }))).toMatch(
      /kafka\.attempts\.topic must be a Kafka topic name/,
    );
    expect(refusal(() => resolveServeConfig({ kafka: { topics: {} } }))).toMatch(
      /'kafka' has an unknown key 'topics'/,
    );
  });

  it('refuse a role other than all without brokers, before anything starts', async () => {
    const config = resolveServeConfig({ role: 'ingest' });
    await expect(startRoles(config, { logger: silentLogger })).rejects.toMatchObject({
      code: 'KS_ANALYZER_CONFIG_INVALID',
      message: expect.stringContaining('kafka.brokers'),
    });
  });
});
