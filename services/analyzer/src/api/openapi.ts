import { ERROR_SCHEMA, type JsonSchema, NAMED_SCHEMAS } from './api-schemas.ts';

export type { JsonSchema } from './api-schemas.ts';

/** An object schema of a route's query string or path parameters. */
export interface ParametersSchema extends JsonSchema {
  type: 'object';
  properties: Readonly<Record<string, JsonSchema>>;
}

/**
 * A route's `schema` as fastify takes it: it validates `querystring` and `params`, and serializes
 * each answer with `response` (by status; `4xx` for every refusal). The other keys are the
 * OpenAPI document's (fastify-swagger's names): `summary`, `security: []` on a route that answers
 * without a token, `produces` for a 200 that is not only JSON, `hide` for a route not in it.
 */
export interface RouteSchema {
  summary: string;
  querystring?: ParametersSchema;
  params?: ParametersSchema;
  response: Readonly<Record<string, JsonSchema>>;
  security?: readonly [];
  /** A 200's body by content type, when it is not only `response[200]` as `application/json`. */
  produces?: Readonly<Record<string, JsonSchema>>;
}

/** A route as the OpenAPI document describes it: the same schema fastify validates and serializes with. */
export interface RouteDoc {
  method: 'GET' | 'POST';
  url: string;
  schema: RouteSchema;
}

export interface OpenApiParameter {
  name: string;
  in: 'query' | 'path';
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface OpenApiResponse {
  description: string;
  content?: Record<string, { schema?: JsonSchema }>;
}

export interface OpenApiOperation {
  summary: string;
  parameters: OpenApiParameter[];
  /** `[]` on public routes: no bearer token needed. */
  security?: readonly [];
  responses: Record<string, OpenApiResponse>;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  components: {
    securitySchemes: Record<string, { type: 'http'; scheme: 'bearer' }>;
    schemas: Record<string, JsonSchema>;
  };
  /** Absent when no tokens are configured: no operation needs one. */
  security?: Record<string, []>[];
  paths: Record<string, Partial<Record<'get' | 'post', OpenApiOperation>>>;
}

export interface OpenApiOptions {
  /** Tokens are configured (`api.tokens`): every operation not marked public needs one. */
  tokens: boolean;
}

/** Refusals every guarded route may answer besides its own, with what each means. */
const REFUSALS: readonly { status: string; description: string; withTokensOnly?: boolean }[] = [
  { status: '400', description: 'Bad parameter (`KS_API_BAD_PARAMETER`)' },
  { status: '401', description: 'Missing or unknown bearer token', withTokensOnly: true },
  { status: '403', description: 'Role, tenant, network or origin not allowed' },
  {
    status: '429',
    description: 'Too many unknown tokens from this address (`KS_API_AUTH_THROTTLED`; see `Retry-After`)',
    withTokensOnly: true,
  },
  { status: '404', description: 'Not found' },
  { status: '405', description: 'Not this method (`Allow` lists the methods the path has)' },
  { status: '414', description: 'A path segment over 4096 characters' },
];

const NAMES = new Map<JsonSchema, string>(
  Object.entries(NAMED_SCHEMAS).map(([name, schema]) => [schema, name]),
);

/**
 * OpenAPI 3.1 for the API, built from the routes' own schemas so the two cannot drift: each schema
 * of `NAMED_SCHEMAS` becomes a component, and every use of it a `$ref`.
 */
export function buildOpenApi(routes: readonly RouteDoc[], options: OpenApiOptions): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  for (const { method, url, schema } of routes) {
    const path = url.replace(/:(\w+)/g, '{$1}');
    const isPublic = schema.security !== undefined;
    const parameters: OpenApiParameter[] = [];
    const query = schema.querystring;
    for (const [name, property] of Object.entries(query?.properties ?? {})) {
      parameters.push(parameter(name, 'query', query?.required?.includes(name) ?? false, property));
    }
    for (const match of url.matchAll(/:(\w+)/g)) {
      const name = match[1]!;
      parameters.push(parameter(name, 'path', true, schema.params?.properties[name] ?? { type: 'string' }));
    }
    const responses: Record<string, OpenApiResponse> = {};
    for (const [status, body] of Object.entries(schema.response)) {
      if (status === '4xx') continue;
      const content = (status === '200' ? schema.produces : undefined) ?? { 'application/json': body };
      responses[status] = {
        description: body.description ?? '',
        content: Object.fromEntries(
          Object.entries(content).map(([type, typed]) => [type, { schema: referenced(typed) }]),
        ),
      };
    }
    if (schema.response['4xx'] !== undefined && !isPublic) {
      for (const refusal of REFUSALS) {
        if (refusal.withTokensOnly && !options.tokens) continue;
        responses[refusal.status] = {
          description: refusal.description,
          content: { 'application/json': { schema: referenced(ERROR_SCHEMA) } },
        };
      }
    }
    paths[path] ??= {};
    paths[path][method.toLowerCase() as 'get' | 'post'] = {
      summary: schema.summary,
      parameters,
      ...(isPublic && options.tokens ? { security: [] as const } : {}),
      responses,
    };
  }
  const schemas = Object.fromEntries(
    Object.entries(NAMED_SCHEMAS).map(([name, schema]) => [name, referencedWithin(schema)]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'keyscope API',
      version: 'v1',
      description: `Duplicate executions of idempotency-keyed mutations, found in OpenTelemetry traces. Times are RFC 3339; lists are { items, nextCursor }. ${
        options.tokens
          ? 'Every operation not marked public needs `Authorization: Bearer <token>` (`api.tokens`).'
          : 'No tokens are configured (`api.tokens`): no operation needs one, and the API answers loopback only.'
      }`,
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas,
    },
    ...(options.tokens ? { security: [{ bearer: [] }] } : {}),
    paths,
  };
}

function parameter(
  name: string,
  where: 'query' | 'path',
  required: boolean,
  schema: JsonSchema,
): OpenApiParameter {
  const { description, ...rest } = schema;
  return { name, in: where, required, ...(description === undefined ? {} : { description }), schema: rest };
}

/** `schema`, or a `$ref` to its component when it is a named one. */
function referenced(schema: JsonSchema): JsonSchema {
  const name = NAMES.get(schema);
  return name === undefined ? referencedWithin(schema) : { $ref: `#/components/schemas/${name}` };
}

/** A copy of `schema` whose named sub-schemas are `$ref`s. */
function referencedWithin(schema: JsonSchema): JsonSchema {
  const copy: JsonSchema = { ...schema };
  if (schema.properties !== undefined) {
    copy.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, property]) => [name, referenced(property)]),
    );
  }
  if (schema.items !== undefined) copy.items = referenced(schema.items);
  return copy;
}
