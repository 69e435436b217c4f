import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningService, resolveServeConfig, silentLogger, startServe } from '@keyscope/analyzer';
import { encodeTraces, type Span } from '@keyscope/otlp';
import { postTraces } from '../support/keyscope-process.ts';

export const ADMIN_TOKEN = 'admin-token-for-browser-tests';
export const READ_TOKEN = 'read-token-for-browser-tests';
export const TRACE_LINK_TEMPLATE = 'https://jaeger.example/trace/{traceId}';

export interface RunningKeyscope {
  service: RunningService;
  /** `http://127.0.0.1:<api port>`: the API and the page. */
  url: string;
  /** GETs the API as the admin token would (or without a token when none are configured). */
  api<T>(path: string): Promise<T>;
  stop(): Promise<void>;
}

/**
 * The embedded service in-process on free ports with a throwaway database; with `tokens`, an admin
 * (alice) and a read (bob) token are configured; `detector` settings as the config file's.
 */
export async function startKeyscope(options: {
  tokens: boolean;
  detector?: Record<string, unknown>;
}): Promise<RunningKeyscope> {
  const dir = mkdtempSync(join(tmpdir(), 'keyscope-browser-'));
  const config = resolveServeConfig({
    api: {
      port: 0,
      traceLinkTemplate: TRACE_LINK_TEMPLATE,
      tokens: options.tokens
        ? [
            { token: ADMIN_TOKEN, role: 'admin', name: 'alice' },
            { token: READ_TOKEN, role: 'read', name: 'bob' },
          ]
        : [],
    },
    db: { path: join(dir, 'keyscope.db') },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    ...(options.detector === undefined ? {} : { detector: options.detector }),
  });
  const service = await startServe(config, { logger: silentLogger });
  const url = `http://127.0.0.1:${service.addresses.api.port}`;
  return {
    service,
    url,
    async api<T>(path: string) {
      const response = await fetch(`${url}${path}`, {
        headers: options.tokens ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {},
      });
      if (!response.ok) throw new Error(`${path} answered ${response.status}`);
      return (await response.json()) as T;
    },
    async stop() {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Sends spans over OTLP/HTTP protobuf as an exporter would, then lets the detector regroup. */
export async function feedSpans(keyscope: RunningKeyscope, spans: readonly Span[]): Promise<void> {
  const otlpHttp = `http://127.0.0.1:${keyscope.service.addresses.otlpHttp.port}`;
  for (let i = 0; i < spans.length; i += 512) {
    const status = await postTraces(otlpHttp, encodeTraces(spans.slice(i, i + 512)));
    if (status !== 200) throw new Error(`OTLP/HTTP answered ${status}`);
  }
  keyscope.service.pipeline.tick(Date.now());
}
