import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTraces, type Span, SpanKind, StatusCode } from '@keyscope/otlp';
import { metricValue } from '@keyscope/testkit';
import { type DecodedExportResponse, decodeExportResponse } from '@keyscope/testkit/wire';
import { stringify } from 'yaml';
import { loadServeConfig } from '../../src/cli.ts';
import type { ServeConfig } from '../../src/config.ts';
import { type RunningRoles, startRoles } from '../../src/kafka/start-roles.ts';
import { formatHostPort } from '../../src/listen-address.ts';
import type { Logger } from '../../src/logger.ts';

/** How a settings test sets its field: the ways a user does (docs/configuration.md). */
export interface Settings {
  /** Written as YAML to a config file given with `--config`, over free ports and a fresh database. */
  readonly file?: Record<string, unknown>;
  /** `KEYSCOPE_*` variables (the only environment `keyscope serve` is given). */
  readonly env?: Record<string, string>;
  /** Flags of `keyscope serve`, after the `--config` flag. */
  readonly flags?: readonly string[];
}

export interface ConfiguredKeyscope {
  readonly config: ServeConfig;
  readonly running: RunningRoles;
  /** A folder of this service's own, deleted by `stop`. */
  readonly dir: string;
  /** What the service logged. */
  readonly lines: string[];
  apiUrl(path: string): string;
  /** GETs `path` of the API (without a token) and parses its JSON. */
  json<T = { items: Array<Record<string, unknown>> }>(path: string): Promise<T>;
  /** POSTs `spans` as OTLP/protobuf to the OTLP/HTTP receiver. */
  exportSpans(spans: Span[], headers?: Record<string, string>): Promise<ExportAnswer>;
  /** The sum of a /metrics sample over the series whose labels include `labels`. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

export interface ExportAnswer {
  readonly status: number;
  readonly body: DecodedExportResponse;
}

/**
 * The configuration `keyscope serve` would run with, loaded through the CLI's own loader from a
 * YAML file, `KEYSCOPE_*` variables and flags. Every port is free (0) and the database is a file
 * in `dir`, unless the settings say otherwise.
 */
export async function loadSettings(settings: Settings, dir: string): Promise<ServeConfig> {
  const file = join(dir, 'keyscope.yaml');
  writeFileSync(file, stringify(deepMerge(baseFile(dir), settings.file ?? {})));
  return loadServeConfig(['--config', file, ...(settings.flags ?? [])], settings.env ?? {});
}

/**
 * `keyscope serve` with `settings` (or the settings for the service's own folder), started as the
 * CLI starts it (startRoles). A service that does not start leaves nothing behind.
 */
export async function startConfigured(
  settingsIn: Settings | ((dir: string) => Settings),
  dependencies: { now?: () => number } = {},
): Promise<ConfiguredKeyscope> {
  const dir = mkdtempSync(join(tmpdir(), 'keyscope-settings-'));
  const settings = typeof settingsIn === 'function' ? settingsIn(dir) : settingsIn;
  const lines: string[] = [];
  const logger: Logger = { info: (line) => lines.push(line), error: (line) => lines.push(line) };
  let running: RunningRoles;
  let config: ServeConfig;
  try {
    config = await loadSettings(settings, dir);
    running = await startRoles(config, { logger, now: dependencies.now });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const apiUrl = (path: string) => `http://${formatHostPort(running.addresses.api)}${path}`;
  return {
    config,
    running,
    dir,
    lines,
    apiUrl,
    async json<T>(path: string): Promise<T> {
      const response = await fetch(apiUrl(path));
      if (!response.ok) throw new Error(`GET ${path} answered ${response.status}: ${await response.text()}`);
      return (await response.json()) as T;
    },
    async exportSpans(spans, headers = {}) {
      const otlp = running.addresses.otlpHttp;
      if (otlp === undefined) throw new Error(`role ${config.role} runs no OTLP receiver`);
      const response = await fetch(`http://${formatHostPort(otlp)}/v1/traces`, {
        method: 'POST',
        body: encodeTraces(spans),
        headers: { 'content-type': 'application/x-protobuf', ...headers },
      });
      const bytes = new Uint8Array(await response.arrayBuffer());
      return { status: response.status, body: response.ok ? decodeExportResponse(bytes) : {} };
    },
    async metric(name, labels = {}) {
      const text = await (await fetch(apiUrl('/metrics'))).text();
      return metricValue(text, name, labels);
    },
    async stop() {
      try {
        await running.stop();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

function baseFile(dir: string): Record<string, unknown> {
  return {
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    db: { path: join(dir, 'keyscope.db') },
    kafka: { stateDir: join(dir, 'partitions') },
  };
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const under = merged[key];
    merged[key] =
      isMapping(under) && isMapping(value) ? deepMerge(under, value as Record<string, unknown>) : value;
  }
  return merged;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

let nextTrace = 1;

/**
 * One key executed (`miss`) once in each of `nodes`' node-local stores, a second apart from
 * `startMillis`: a cross-store duplicate, the detector's finding as soon as it has both.
 */
export function executedTwice(
  key: string,
  options: { startMillis?: number; tenant?: string; nodes?: readonly string[]; secondOutcome?: string } = {},
): Span[] {
  const start = options.startMillis ?? Date.now() - 5_000;
  return (options.nodes ?? ['payments-a', 'payments-b']).map((node, index) => {
    const id = nextTrace++;
    return {
      traceId: id.toString(16).padStart(32, '0'),
      spanId: id.toString(16).padStart(16, '0'),
      parentSpanId: '',
      name: 'POST /payments',
      kind: SpanKind.SERVER,
      startTimeUnixMillis: start + index * 1000,
      endTimeUnixMillis: start + index * 1000 + 100,
      status: { code: StatusCode.UNSET, message: '' },
      attributes: {
        'idempotency.key': key,
        // A second node's store that errs: the retry crossed the key's scope without executing.
        'idempotency.outcome':
          index > 0 && options.secondOutcome !== undefined ? options.secondOutcome : 'miss',
        'idempotency.scope': 'node',
        'http.route': '/payments',
        ...(options.tenant === undefined ? {} : { 'tenant.id': options.tenant }),
      },
      events: [],
      resource: { attributes: { 'service.name': 'payments', 'service.instance.id': node } },
      scope: { name: 'settings-test', version: '' },
    };
  });
}

/** Resolves once `check` is true, checking every 100 ms; rejects after `timeoutMillis`. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMillis: number): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMillis} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A port free on `host` a moment ago, for settings that must name one. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
