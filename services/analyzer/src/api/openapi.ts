/** A route as the OpenAPI document describes it; the same schemas fastify validates with. */
export interface RouteDoc {
  method: 'GET' | 'POST';
  url: string;
  summary: string;
  query?: { type: 'object'; properties: Record<string, object>; additionalProperties?: boolean };
  params?: object;
  /** Not behind the bearer token. */
  public?: boolean;
  /** What a 200 answers with; `application/json` unless set. */
  contentType?: string;
}

/** A JSON schema as the routes declare them; the reference page reads the keywords it shows. */
export interface JsonSchema {
  type?: string;
  format?: string;
  enum?: readonly unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  $ref?: string;
}

export interface OpenApiParameter {
  name: string;
  in: 'query' | 'path';
  required: boolean;
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
  security?: [];
  responses: Record<string, OpenApiResponse>;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  components: {
    securitySchemes: Record<string, { type: 'http'; scheme: 'bearer' }>;
    schemas: Record<string, JsonSchema>;
  };
  security: Record<string, []>[];
  paths: Record<string, Partial<Record<'get' | 'post', OpenApiOperation>>>;
}

/** Every refusal's body (error-handler.ts). */
const ERROR_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
  },
};

const ERROR_CONTENT = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

/** OpenAPI 3.1 for the API, built from the routes' own schemas so the two cannot drift. */
export function buildOpenApi(routes: readonly RouteDoc[]): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  for (const route of routes) {
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    const parameters: OpenApiParameter[] = [];
    for (const [name, schema] of Object.entries(route.query?.properties ?? {})) {
      parameters.push({ name, in: 'query', required: false, schema: schema as JsonSchema });
    }
    for (const match of route.url.matchAll(/:(\w+)/g)) {
      parameters.push({ name: match[1]!, in: 'path', required: true, schema: { type: 'string' } });
    }
    const refusal = (description: string): OpenApiResponse => ({ description, content: ERROR_CONTENT });
    paths[path] ??= {};
    paths[path][route.method.toLowerCase() as 'get' | 'post'] = {
      summary: route.summary,
      parameters,
      ...(route.public ? { security: [] as [] } : {}),
      responses: {
        200: { description: 'OK', content: { [route.contentType ?? 'application/json']: {} } },
        ...(route.public
          ? {}
          : {
              400: refusal('Bad parameter (`KS_API_BAD_PARAMETER`)'),
              401: refusal('Missing or unknown bearer token'),
              403: refusal('Role, tenant, network or origin not allowed'),
              429: refusal(
                'Too many unknown tokens from this address (`KS_API_AUTH_THROTTLED`; see `Retry-After`)',
              ),
              404: refusal('Not found'),
              405: refusal('Not this method (`Allow` lists the methods the path has)'),
              414: refusal('A path segment over 4096 characters'),
            }),
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'keyscope API',
      version: 'v1',
      description:
        'Duplicate executions of idempotency-keyed mutations, found in OpenTelemetry traces. Times are RFC 3339; lists are { items, nextCursor }.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Error: ERROR_SCHEMA },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
