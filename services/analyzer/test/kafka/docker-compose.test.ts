import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { defaultServeConfig, envOverrides, resolveServeConfig, type ServeConfig } from '../../src/config.ts';

/**
 * docker-compose.yml cannot run here (no Docker engine), so this reads it as Docker Compose would
 * and checks that its parts agree: keyscope's environment is a valid configuration for each role,
 * its topics are the ones kafka-init creates with the partitions and retention keyscope expects,
 * the Collector writes the topic and encoding the ingest role reads, and the ports line up.
 */
const root = fileURLToPath(new URL('../../../../', import.meta.url));
const read = (path: string) => readFileSync(`${root}${path}`, 'utf8');

interface Service {
  image?: string;
  environment?: Record<string, string | number | boolean>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  command?: string[];
  entrypoint?: string[];
  healthcheck?: { test: string[] };
}

/** Compose's `${NAME:-default}` interpolation, with the defaults (what `docker compose up` uses). */
function interpolate(text: string): string {
  return text.replace(/\$\{([A-Z_]+)(:-([^}]*))?\}/g, (_match, name: string, _default, fallback?: string) => {
    if (fallback === undefined) throw new Error(`\${${name}} has no default`);
    return fallback;
  });
}

const compose = parse(interpolate(read('docker-compose.yml')), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const services = compose.services;
const keyscopeServices = Object.keys(services).filter((name) => name.startsWith('keyscope-'));

/** Topics as deploy/kafka-topics.sh creates them. */
const topics = new Map<string, { partitions: number; settings: Record<string, string> }>();
for (const line of read('deploy/kafka-topics.sh').split('\n')) {
  const match = /^topics --topic (\S+) --partitions (\d+)((?: --config \S+)*)$/.exec(line.trim());
  if (match === null) continue;
  const settings = Object.fromEntries(
    [...match[3]!.matchAll(/--config ([^=\s]+)=(\S+)/g)].map((setting) => [setting[1]!, setting[2]!]),
  );
  topics.set(match[1]!, { partitions: Number(match[2]), settings });
}

const collector = parse(read('deploy/otel-collector.yaml')) as {
  receivers: { otlp: { protocols: { grpc: { endpoint: string }; http: { endpoint: string } } } };
  exporters: {
    kafka: { brokers: string[]; topic: string; encoding: string; producer?: { compression?: string } };
  };
  service: { pipelines: { traces: { receivers: string[]; exporters: string[] } } };
};

/** A repository file mounted at `containerPath` in a service, if any. */
function mountedFile(service: Service, containerPath: string): string | undefined {
  for (const volume of service.volumes ?? []) {
    const [source, target] = volume.split(':');
    if (target === containerPath && source!.startsWith('./')) return source!.slice(2);
  }
  return undefined;
}

/** What `keyscope serve` resolves in that container: defaults < KEYSCOPE_CONFIG file < KEYSCOPE_* variables. */
function keyscopeConfig(name: string): ServeConfig {
  const service = services[name]!;
  const env = Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([key, value]) => [key, String(value)]),
  );
  let base = defaultServeConfig();
  if (env.KEYSCOPE_CONFIG !== undefined) {
    const file = mountedFile(service, env.KEYSCOPE_CONFIG);
    expect(file, `${name}: KEYSCOPE_CONFIG ${env.KEYSCOPE_CONFIG} is not a mounted file`).toBeDefined();
    base = resolveServeConfig(parse(read(file!)));
  }
  return resolveServeConfig(envOverrides(env), base);
}

const kafkaAddress = (() => {
  const env = services.kafka!.environment!;
  return /PLAINTEXT:\/\/([^,]+)/.exec(String(env.KAFKA_ADVERTISED_LISTENERS))![1]!;
})();

describe('docker-compose.yml', () => {
  it('runs Kafka (one KRaft node), the Collector, keyscope ingest, two detect replicas, serve and Alertmanager', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'alertmanager',
        'kafka',
        'kafka-init',
        'keyscope-detect-1',
        'keyscope-detect-2',
        'keyscope-ingest',
        'keyscope-serve',
        'otel-collector',
      ].sort(),
    );
    expect(String(services.kafka!.environment!.KAFKA_PROCESS_ROLES).split(',').sort()).toEqual([
      'broker',
      'controller',
    ]);
    expect(services['otel-collector']!.image).toMatch(/^otel\/opentelemetry-collector-contrib:/);
    expect(services.alertmanager!.image).toMatch(/^prom\/alertmanager:/);
    const roles = keyscopeServices.map((name) => keyscopeConfig(name).role).sort();
    expect(roles).toEqual(['detect', 'detect', 'ingest', 'serve']);
  });

  it('gives every keyscope service an environment its configuration schema accepts, pointing at the broker', () => {
    for (const name of keyscopeServices) {
      const config = keyscopeConfig(name);
      expect(config.kafka.brokers, name).toEqual([kafkaAddress]);
      expect(services[name]!.depends_on?.['kafka-init']?.condition, name).toBe(
        'service_completed_successfully',
      );
    }
  });

  it('creates exactly the topics keyscope uses, with the partitions and settings it expects', () => {
    const used = new Set<string>();
    for (const name of keyscopeServices) {
      const { kafka, detector } = keyscopeConfig(name);
      const attempts = topics.get(kafka.attempts.topic);
      expect(attempts, `${name}: ${kafka.attempts.topic}`).toMatchObject({
        partitions: kafka.attempts.partitions,
      });
      // A detect instance taking over a partition rebuilds it from one retry horizon of attempts.
      expect(Number(attempts!.settings['retention.ms'])).toBeGreaterThanOrEqual(detector.retryHorizonMillis);
      expect(attempts!.settings['cleanup.policy']).toBe('delete');
      expect(topics.get(kafka.incidents.topic), name).toMatchObject({
        partitions: kafka.incidents.partitions,
        settings: { 'cleanup.policy': 'compact' },
      });
      expect(topics.has(kafka.traces.topic), name).toBe(true);
      expect(topics.has(kafka.deadLetter.topic), name).toBe(true);
      // The compose file creates them all up front: keyscope must not create a misspelt one.
      expect(kafka.createTopics, name).toBe(false);
      for (const topic of [
        kafka.traces.topic,
        kafka.attempts.topic,
        kafka.incidents.topic,
        kafka.deadLetter.topic,
      ])
        used.add(topic);
    }
    expect([...topics.keys()].sort()).toEqual([...used].sort());
  });

  it('has the Collector write the traces topic and encoding the ingest role reads, to the same broker', () => {
    const ingest = keyscopeConfig('keyscope-ingest');
    expect(collector.exporters.kafka.brokers).toEqual([kafkaAddress]);
    expect(collector.exporters.kafka.topic).toBe(ingest.kafka.traces.topic);
    expect(collector.exporters.kafka.encoding).toBe(ingest.kafka.traces.encoding);
    expect(['none', 'gzip', undefined]).toContain(collector.exporters.kafka.producer?.compression);
    expect(collector.service.pipelines.traces.receivers).toContain('otlp');
    expect(collector.service.pipelines.traces.exporters).toContain('kafka');
    const published = services['otel-collector']!.ports ?? [];
    for (const endpoint of Object.values(collector.receivers.otlp.protocols).map((p) => p.endpoint)) {
      const port = endpoint.split(':').pop()!;
      expect(published).toContain(`${port}:${port}`);
    }
    const mount = mountedFile(services['otel-collector']!, '/etc/otelcol-contrib/config.yaml');
    expect(mount).toBe('deploy/otel-collector.yaml');
    expect(services['otel-collector']!.command).toContain('--config=/etc/otelcol-contrib/config.yaml');
  });

  it('keeps each detect replica in its own state volume', () => {
    const detects = keyscopeServices.filter((name) => keyscopeConfig(name).role === 'detect');
    const volumes = detects.map((name) => {
      const stateDir = keyscopeConfig(name).kafka.stateDir;
      const volume = (services[name]!.volumes ?? []).find((entry) =>
        stateDir.startsWith(entry.split(':')[1]!),
      );
      expect(volume, `${name}: no volume holds ${stateDir}`).toBeDefined();
      const source = volume!.split(':')[0]!;
      expect(compose.volumes).toHaveProperty(source);
      return source;
    });
    expect(new Set(volumes).size).toBe(detects.length);
  });

  it('publishes the API of the serve role on its port, health-checks every role there, and pages Alertmanager', () => {
    const serve = keyscopeConfig('keyscope-serve');
    expect(services['keyscope-serve']!.ports).toContain(`127.0.0.1:${serve.api.port}:${serve.api.port}`);
    expect(serve.api.host).toBe('0.0.0.0');
    expect(serve.api.tokens.length).toBeGreaterThan(0);
    for (const name of keyscopeServices) {
      const port = keyscopeConfig(name).api.port;
      expect(services[name]!.healthcheck!.test.join(' '), name).toContain(`127.0.0.1:${port}/readyz`);
    }
    const sinks = serve.alerts.sinks.filter((sink) => sink.type === 'alertmanager');
    expect(sinks).toHaveLength(1);
    const url = new URL((sinks[0] as { url: string }).url);
    expect(url.hostname).toBe('alertmanager');
    expect(services.alertmanager!.ports).toContain(`127.0.0.1:${url.port}:${url.port}`);
    expect(mountedFile(services.alertmanager!, '/etc/alertmanager/alertmanager.yml')).toBe(
      'deploy/alertmanager.yml',
    );
    expect(parse(read('deploy/alertmanager.yml'))).toHaveProperty('route.receiver');
  });
});
