import { createRequire } from 'node:module';
import type { RunningService } from '@keyscope/analyzer';
import { scenarios, simulate } from '@keyscope/simulator';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiWithPage } from '../../services/analyzer/src/api-with-alerts.ts';
import { type EmbeddedKeyscope, startEmbeddedKeyscope } from '../support/embedded-keyscope.ts';
import { exportOverOtlpHttp } from '../support/otlp-http-export.ts';

/**
 * Every answer of the API to a real scenario, held to the OpenAPI document it serves: the embedded
 * service is fed a simulated node failover by the real OTLP exporter, then every GET route is
 * called with its main query variants and refusals, and each body validated (ajv, as fastify
 * validates) against the schema the document declares for that status and content type. Every
 * object the document declares is closed, so a field it does not declare fails, as does a missing
 * required one. Answers whose schema drives the serializer lose undeclared fields on the way out;
 * the same requests are also answered by a second API over the service's store, as serve builds
 * it, and what its handlers returned (before serialization) is validated too.
 */

interface Schema {
  $ref?: string;
  [keyword: string]: unknown;
}
interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}
interface Validate {
  (data: unknown): boolean;
  errors?: unknown[] | null;
}
interface Ajv {
  addSchema(schema: object, key?: string): Ajv;
  compile(schema: object): Validate;
}

// fastify's own ajv and its formats (`date-time`), as @fastify/ajv-compiler loads them.
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
const fromAjvCompiler = createRequire(fromFastify.resolve('@fastify/ajv-compiler'));
const AjvClass = fromAjvCompiler('ajv').default as new (options: object) => Ajv;
const addFormats = fromAjvCompiler('ajv-formats').default as (ajv: Ajv) => void;

const READ_TOKEN = 'a-long-random-read-token!';
const TOKENS = [
  { token: 'a-long-random-admin-token', role: 'admin' as const, name: 'alice' },
  { token: READ_TOKEN, role: 'read' as const },
];
const START = Date.now() - 5 * 60_000;
const { spans, truth } = simulate(scenarios.nodeFailover({ startUnixMillis: START }), { seed: 3 });

let keyscope: EmbeddedKeyscope;
let service: RunningService;
let api: string;
let twin: FastifyInstance;
/** What the twin's handlers returned for the request in flight, before serialization. */
let returned: unknown;
let document: Document;
let ajv: Ajv;
const validators = new Map<Schema, Validate>();
// biome-ignore lint/suspicious/noExplicitAny: an answer as a client script reads it.
let sample: any;
/** `GET <path template> <status>` of every answer validated. */
const answered = new Set<string>();

beforeAll(async () => {
  keyscope = await startEmbeddedKeyscope('api-answers', { api: { tokens: TOKENS } });
  ({ service, api } = keyscope);
  for (const result of await exportOverOtlpHttp(service.addresses.otlpHttp.port, spans)) {
    expect(result.error).toBeUndefined();
  }
  service.pipeline.tick(Date.now());

  twin = createApiWithPage({
    store: service.store,
    detector: () => service.pipeline.detector,
    tokens: TOKENS,
    metrics: async () => 'keyscope_up 1\n',
    ready: () => true,
    traceLinkTemplate: 'https://traces.example/{traceId}',
  });
  twin.addHook('preSerialization', async (_request, _reply, payload) => {
    returned = payload;
    return payload;
  });

  document = (await (await fetch(`${api}/openapi.json`)).json()) as Document;
  ajv = new AjvClass({ allErrors: true, allowUnionTypes: true, strict: true });
  addFormats(ajv);
  // The document's `#/components/schemas/X` as one schema of definitions ajv resolves them in.
  ajv.addSchema({ $id: 'components', definitions: retargeted(document.components.schemas) });
}, 120_000);

afterAll(async () => {
  await twin?.close();
  await keyscope?.stop();
});

function retargeted<T>(schema: T): T {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"components#/definitions/'));
}

/** The document's operation for a concrete path: `/api/v1/keys/k1` is `/api/v1/keys/{key}`. */
function operationOf(path: string): { template: string; operation: Operation } {
  const bare = path.split('?')[0]!;
  for (const [template, item] of Object.entries(document.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`);
    if (pattern.test(bare) && item.get !== undefined) return { template, operation: item.get };
  }
  throw new Error(`the document has no GET operation for ${bare}`);
}

function validatorOf(schema: Schema): Validate {
  let validate = validators.get(schema);
  if (validate === undefined) {
    validate = ajv.compile(retargeted(schema));
    validators.set(schema, validate);
  }
  return validate;
}

function expectValid(schema: Schema, body: unknown, what: string): void {
  const validate = validatorOf(schema);
  const valid = validate(body);
  expect(valid ? [] : validate.errors, what).toEqual([]);
}

/**
 * Calls `path` on the running service (and its twin) and validates both answers against the
 * document's schema for the status and content type; the body, parsed when JSON.
 */
async function call(
  path: string,
  expected: number,
  options: { token?: string | null; accept?: string } = {},
  // biome-ignore lint/suspicious/noExplicitAny: the test reads the API's JSON as a client script would.
): Promise<any> {
  const headers: Record<string, string> = {};
  const token = options.token === undefined ? READ_TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (options.accept !== undefined) headers.accept = options.accept;
  const response = await fetch(`${api}${path}`, { headers });
  const text = await response.text();
  expect(response.status, `${path}: ${text.slice(0, 300)}`).toBe(expected);

  const { template, operation } = operationOf(path);
  const declared = operation.responses[String(response.status)];
  expect(declared, `GET ${template} declares no ${response.status}`).toBeDefined();
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!;
  const media = declared!.content?.[type];
  expect(media, `GET ${template} ${response.status} declares no ${type}`).toBeDefined();
  expect(media!.schema, `GET ${template} ${response.status} ${type} has no schema`).toBeDefined();
  answered.add(`GET ${template} ${response.status}`);
  if (type !== 'application/json') {
    expectValid(media!.schema!, text, `GET ${path} ${response.status}`);
    return text;
  }
  const body = JSON.parse(text);
  expectValid(media!.schema!, body, `GET ${path} ${response.status}`);

  returned = undefined;
  const again = await twin.inject({ url: path, headers, remoteAddress: '127.0.0.1' });
  expect(again.statusCode, path).toBe(expected);
  if (returned !== undefined) {
    expectValid(
      media!.schema!,
      JSON.parse(JSON.stringify(returned)),
      `GET ${path} as its handler returned it`,
    );
  }
  return body;
}

describe('every answer of the API to a node failover', () => {
  it('matches the document: findings, in every filter, page, export and refusal', async () => {
    const all = await call('/api/v1/findings?limit=500', 200);
    expect(all.items.length).toBe(truth.keys.length);
    const first = all.items[0];
    const page = await call('/api/v1/findings?limit=1', 200);
    expect(page.nextCursor).not.toBeNull();
    await call(`/api/v1/findings?limit=1&cursor=${encodeURIComponent(page.nextCursor)}`, 200);
    await call('/api/v1/findings?class=cross_store_duplicate&service=payments', 200);
    await call(`/api/v1/findings?key=${encodeURIComponent(first.key)}`, 200);
    await call(`/api/v1/findings?incident=${encodeURIComponent(first.incidentId)}`, 200);
    await call(
      `/api/v1/findings?since=${new Date(START).toISOString()}&until=${new Date().toISOString()}`,
      200,
    );
    const csv = await call('/api/v1/findings?format=csv', 200);
    expect(csv.split('\n').length).toBeGreaterThan(truth.keys.length);
    await call('/api/v1/findings', 200, { accept: 'application/x-ndjson' });
    for (const refused of [
      '/api/v1/findings?limit=0',
      '/api/v1/findings?class=ran_thrice',
      '/api/v1/findings?since=yesterday',
      '/api/v1/findings?cursor=not-a-cursor',
      '/api/v1/findings?format=csv&limit=5',
      '/api/v1/findings?colour=red',
    ]) {
      expect((await call(refused, 400)).error.code, refused).toMatch(/^KS_/);
    }
    await call('/api/v1/findings', 401, { token: null });
    await call('/api/v1/findings', 401, { token: 'an-unknown-token-of-some-length' });
  });

  it('matches the document: incidents, their detail, export and refusals', async () => {
    const open = await call('/api/v1/incidents?status=open', 200);
    expect(open.items.length).toBeGreaterThan(0);
    await call('/api/v1/incidents', 200);
    await call('/api/v1/incidents?class=cross_store_duplicate&service=payments&limit=1', 200);
    const id = open.items[0].id;
    const detail = await call(`/api/v1/incidents/${id}`, 200);
    expect(detail.findings.length).toBeGreaterThan(0);
    expect(detail.routingEvent).toMatchObject({ type: 'node_down' });
    await call(`/api/v1/incidents/${id}?format=ndjson`, 200);
    await call('/api/v1/incidents/no-such-incident', 404);
    await call('/api/v1/incidents?status=pending', 400);
    await call(`/api/v1/incidents/${id}?limit=5`, 400);
    await call(`/api/v1/incidents/${id}`, 401, { token: null });
  });

  it('matches the document: a key that ran twice, one that ran once, and one never seen', async () => {
    const duplicated = truth.keys[0]!.key;
    const twice = await call(`/api/v1/keys/${encodeURIComponent(duplicated)}`, 200);
    expect(twice.ranTwice).toBe(true);
    sample = twice;
    const duplicatedKeys = new Set(truth.keys.map((k) => k.key));
    const clean = spans.find((s) => {
      const key = s.attributes['idempotency.key'];
      return typeof key === 'string' && !duplicatedKeys.has(key);
    })!.attributes['idempotency.key'] as string;
    expect((await call(`/api/v1/keys/${encodeURIComponent(clean)}`, 200)).ranTwice).toBe(false);
    expect((await call('/api/v1/keys/never-sent', 200)).seen).toBe(false);
    await call('/api/v1/keys/k1', 401, { token: null });
  });

  it('matches the document: the scope report, routing events, the page settings and the refusals of each', async () => {
    const scopes = await call('/api/v1/scopes', 200);
    expect(scopes.items.length).toBeGreaterThan(0);
    await call('/api/v1/scopes?limit=1', 200);
    await call('/api/v1/scopes?cursor=bm90LWEtdGllcg', 400);
    await call('/api/v1/scopes', 401, { token: null });

    const events = await call('/api/v1/routing-events', 200);
    expect(events.items.length).toBeGreaterThan(0);
    await call('/api/v1/routing-events?type=node_down&service=payments&limit=1', 200);
    await call(`/api/v1/routing-events?since=${new Date(START).toISOString()}`, 200);
    await call('/api/v1/routing-events?type=solar_flare', 400);
    await call('/api/v1/routing-events', 401, { token: null });

    expect((await call('/api/v1/ui-config', 200)).principal).toMatchObject({ role: 'read', tenant: null });
    await call('/api/v1/ui-config', 401, { token: null });
  });

  it('matches the document: health, readiness, metrics and the document itself', async () => {
    expect(await call('/healthz', 200, { token: null })).toEqual({ status: 'ok' });
    expect(await call('/readyz', 200, { token: null })).toEqual({ status: 'ready' });
    expect(await call('/metrics', 200)).toContain('keyscope_spans_received_total');
    await call('/metrics', 401, { token: null });
    await call('/openapi.json', 200, { token: null });
    await call('/docs/json', 200, { token: null });
    expect(await call('/docs', 200, { token: null })).toContain('<!doctype html>');
  });

  it('called every GET operation of the document, each with a 200', () => {
    const operations = Object.entries(document.paths)
      .filter(([, item]) => item.get !== undefined)
      .map(([path]) => `GET ${path} 200`);
    expect(operations.filter((operation) => !answered.has(operation))).toEqual([]);
  });
});

describe('the validation itself', () => {
  it('refuses an answer with a field the document does not declare, or without a required one', () => {
    const { operation } = operationOf('/api/v1/keys/k1');
    const validate = validatorOf(operation.responses['200']!.content!['application/json']!.schema!);
    expect(validate(sample)).toBe(true);
    expect(validate({ ...sample, total: 3 })).toBe(false);
    const [attempt, ...others] = sample.attempts;
    expect(validate({ ...sample, attempts: [{ ...attempt, internal: 1 }, ...others] })).toBe(false);
    const { routing: _, ...withoutRouting } = sample.findings[0];
    expect(validate({ ...sample, findings: [withoutRouting] })).toBe(false);
  });
});
