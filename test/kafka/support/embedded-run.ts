import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveServeConfig, type ServeConfig, silentLogger, startServe } from '@keyscope/analyzer';
import { encodeTraces, type Span } from '@keyscope/otlp';
import { type Outcome, outcomeOf } from './outcome.ts';

/** What the scaled mode must agree with: the same spans over OTLP/HTTP to the embedded service. */
export async function embeddedOutcome(
  spanRuns: readonly (readonly Span[])[],
  overrides: Record<string, unknown> = {},
): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'keyscope-embedded-'));
  const config: ServeConfig = resolveServeConfig({
    ...overrides,
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    db: { path: join(dir, 'embedded.db') },
  });
  const service = await startServe(config, { logger: silentLogger });
  try {
    const otlpHttp = `http://127.0.0.1:${service.addresses.otlpHttp.port}`;
    for (const spans of spanRuns) {
      for (let i = 0; i < spans.length; i += 300) {
        const response = await fetch(`${otlpHttp}/v1/traces`, {
          method: 'POST',
          body: encodeTraces(spans.slice(i, i + 300)),
          headers: { 'content-type': 'application/x-protobuf' },
        });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`the embedded service answered ${response.status}`);
      }
    }
    // The last tick regroups findings whose routing events changed with the last spans.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    return await outcomeOf(`http://127.0.0.1:${service.addresses.api.port}`);
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
