import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isKeyscopeError } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { defaultServeConfig, readConfigFile, resolveServeConfig } from '../src/config.ts';
import { ANALYZER_CONFIG_INVALID } from '../src/errors.ts';

function configError(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (error) {
    if (isKeyscopeError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

describe('serve configuration', () => {
  it('defaults to the OTLP ports on loopback', () => {
    const config = defaultServeConfig();
    expect(config.otlp.http).toMatchObject({
      host: '127.0.0.1',
      port: 4318,
      bodyLimitBytes: 20 * 1024 * 1024,
    });
    expect(config.otlp.grpc).toMatchObject({ host: '127.0.0.1', port: 4317 });
  });

  it('lays a partial config over the defaults and freezes the result', () => {
    const config = resolveServeConfig({ otlp: { http: { port: 0 } }, db: { path: ':memory:' } });
    expect(config.otlp.http.port).toBe(0);
    expect(config.otlp.http.bodyLimitBytes).toBe(defaultServeConfig().otlp.http.bodyLimitBytes);
    expect(config.db.path).toBe(':memory:');
    expect(Object.isFrozen(config.otlp.http)).toBe(true);
  });

  it('names an unknown key with its parent', () => {
    const error = configError(() => resolveServeConfig({ otlp: { htttp: {} } }));
    expect(error.code).toBe(ANALYZER_CONFIG_INVALID.code);
    expect(error.message).toContain("'otlp'");
    expect(error.message).toContain('htttp');
  });

  it.each([
    [{ otlp: { grpc: { port: 70_000 } } }, 'otlp.grpc.port'],
    [{ otlp: { http: { port: '4318' } } }, 'otlp.http.port'],
    [{ otlp: { http: { bodyLimitBytes: 0 } } }, 'otlp.http.bodyLimitBytes'],
    [{ otlp: { admission: { maxInFlightSpans: 1.5 } } }, 'otlp.admission.maxInFlightSpans'],
    [{ api: { host: '' } }, 'api.host'],
    [{ db: 'keyscope.db' }, 'db'],
    [{ otlp: { http: { bodyTimeoutMillis: 0 } } }, 'otlp.http.bodyTimeoutMillis'],
    [{ otlp: { http: { headersTimeoutMillis: 2 ** 31 } } }, 'otlp.http.headersTimeoutMillis'],
    [{ otlp: { grpc: { keepaliveTimeMillis: 1.5 } } }, 'otlp.grpc.keepaliveTimeMillis'],
    [{ otlp: { grpc: { maxConcurrentStreams: 0 } } }, 'otlp.grpc.maxConcurrentStreams'],
    [{ db: { integrityCheck: 'fast' } }, 'db.integrityCheck'],
    [{ db: { maxBytes: 0 } }, 'db.maxBytes'],
    [{ spans: { maxKeyBytes: 0 } }, 'spans.maxKeyBytes'],
    [{ spans: { maxFutureMillis: -1 } }, 'spans.maxFutureMillis'],
  ])('names the invalid field in %j', (overrides, field) => {
    const error = configError(() => resolveServeConfig(overrides));
    expect(error.code).toBe(ANALYZER_CONFIG_INVALID.code);
    expect(error.message.startsWith(field)).toBe(true);
  });

  it('checks the database at open and bounds its size by default', () => {
    expect(defaultServeConfig().db).toMatchObject({ integrityCheck: 'quick', maxBytes: 10 * 1024 ** 3 });
    expect(resolveServeConfig({ db: { integrityCheck: 'off' } }).db.integrityCheck).toBe('off');
  });

  it('holds spans to a 5 min future, the retry horizon plus 1 h, 1 KiB keys and names, 4 KiB values', () => {
    expect(defaultServeConfig().spans).toEqual({
      maxFutureMillis: 300_000,
      maxLateMillis: 3_600_000,
      maxKeyBytes: 1024,
      maxNameBytes: 1024,
      maxValueBytes: 4096,
    });
    expect(resolveServeConfig({ spans: { maxKeyBytes: 255 } }).spans.maxKeyBytes).toBe(255);
  });

  it('takes a metrics token, and refuses one with a tenant', () => {
    const scraper = { token: 'scrape-token-0123456789', role: 'metrics' };
    expect(resolveServeConfig({ api: { tokens: [scraper] } }).api.tokens[0]!.role).toBe('metrics');
    const error = configError(() =>
      resolveServeConfig({ api: { tokens: [{ ...scraper, tenant: 'acme' }] } }),
    );
    expect(error.code).toBe(ANALYZER_CONFIG_INVALID.code);
    expect(error.message).toContain('api.tokens[0]');
  });

  it('budgets 20 unknown tokens per address, then one a second, over at most 10,000 addresses', () => {
    expect(defaultServeConfig().api.authFailureBudget).toEqual({
      burst: 20,
      refillMillis: 1_000,
      maxAddresses: 10_000,
    });
    const error = configError(() => resolveServeConfig({ api: { authFailureBudget: { burst: 0 } } }));
    expect(error.message).toContain('api.authFailureBudget.burst');
  });

  it('archives nothing by default, and refuses archive files larger than the archive', () => {
    expect(defaultServeConfig().archive).toEqual({
      path: '',
      maxBytes: 10 * 1024 * 1024 * 1024,
      fileBytes: 64 * 1024 * 1024,
      fileMillis: 60_000,
      maxQueuedBytes: 64 * 1024 * 1024,
    });
    const error = configError(() => resolveServeConfig({ archive: { maxBytes: 1000, fileBytes: 1001 } }));
    expect(error.code).toBe(ANALYZER_CONFIG_INVALID.code);
    expect(error.message).toContain('archive.fileBytes');
  });

  it('refuses two listeners on one port', () => {
    const error = configError(() => resolveServeConfig({ api: { port: 4318 } }));
    expect(error.message).toContain('otlp.http.port');
  });

  it('reads a YAML config file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keyscope-config-'));
    const path = join(dir, 'keyscope.yaml');
    writeFileSync(path, 'otlp:\n  http:\n    port: 14318\n  admission:\n    retryAfterSeconds: 2\n');
    const config = resolveServeConfig(await readConfigFile(path));
    expect(config.otlp.http.port).toBe(14318);
    expect(config.otlp.admission.retryAfterSeconds).toBe(2);
  });

  it('refuses a config file that is missing', async () => {
    await expect(readConfigFile('/nonexistent/keyscope.yaml')).rejects.toMatchObject({
      code: ANALYZER_CONFIG_INVALID.code,
    });
  });
});
