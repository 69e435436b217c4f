/** A route as the OpenAPI document describes it; the same schemas fastify validates with. */
export interface RouteDoc {
  method: 'GET' | 'POST';
  url: string;
  summary: string;
  query?: { type: 'object'; properties: Record<string, object>; additionalProperties?: boolean };
  params?: object;
  /** Not behind the bearer token. */
  public?: boolean;
}

/** OpenAPI 3.1 for the API, built from the routes' own schemas so the two cannot drift. */
export function buildOpenApi(routes: readonly RouteDoc[]) {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    const parameters: object[] = [];
    for (const [name, schema] of Object.entries(route.query?.properties ?? {})) {
      parameters.push({ name, in: 'query', required: false, schema });
    }
    for (const match of route.url.matchAll(/:(\w+)/g)) {
      parameters.push({ name: match[1], in: 'path', required: true, schema: { type: 'string' } });
    }
    paths[path] ??= {};
    paths[path]![route.method.toLowerCase()] = {
      summary: route.summary,
      parameters,
      ...(route.public ? { security: [] } : {}),
      responses: {
        200: { description: 'OK' },
        ...(route.public
          ? {}
          : {
              400: { description: 'Bad parameter (`KS_API_BAD_PARAMETER`)' },
              401: { description: 'Missing or unknown bearer token' },
              403: { description: 'Role, tenant, network or origin not allowed' },
              404: { description: 'Not found' },
              405: { description: 'Not this method (`Allow` lists the methods the path has)' },
              414: { description: 'A path segment over 4096 characters' },
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
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths,
  };
}
