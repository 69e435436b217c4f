import { describe, expect, it } from 'vitest';
import { renderApiReference } from '../../src/api/api-reference.ts';
import { ERROR_SCHEMA } from '../../src/api/api-schemas.ts';
import { buildOpenApi, type RouteDoc } from '../../src/api/openapi.ts';

const THING = { type: 'object', description: 'A thing.', properties: {}, additionalProperties: false };

function thing(summary: string): RouteDoc {
  return { method: 'GET', url: '/x', schema: { summary, response: { 200: THING, '4xx': ERROR_SCHEMA } } };
}

describe('renderApiReference', () => {
  it('shows each parameter with its schema in words, and whether the operation needs a token', () => {
    const page = renderApiReference(
      buildOpenApi(
        [
          {
            method: 'GET',
            url: '/api/v1/things/:id',
            schema: {
              summary: 'One thing.',
              querystring: {
                type: 'object',
                properties: {
                  limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
                  status: {
                    type: 'string',
                    enum: ['open', 'resolved'],
                    description: 'Only `open` ones, or not.',
                  },
                },
              },
              response: { 200: THING, '4xx': ERROR_SCHEMA },
            },
          },
          {
            method: 'GET',
            url: '/healthz',
            schema: { summary: 'Liveness.', security: [], response: { 200: THING } },
          },
        ],
        { tokens: true },
      ),
    );
    expect(page).toContain('data-operation="GET /api/v1/things/{id}"');
    expect(page).toMatch(
      /data-parameter="limit"><td><code>limit<\/code><\/td><td>query<\/td><td>no<\/td><td>integer, 1 to 500, default <code>50<\/code>/,
    );
    expect(page).toContain('one of <code>open</code>, <code>resolved</code>');
    expect(page).toContain('<td>Only <code>open</code> ones, or not.</td>');
    expect(page).toMatch(/data-parameter="id">.*<td>path<\/td><td>yes<\/td>/);
    expect(page).toMatch(
      /id="get-api-v1-things-id"[\s\S]*Needs a bearer token[\s\S]*id="get-healthz"[\s\S]*Public/,
    );
    // Refusals link to the error body's schema, which the page shows.
    expect(page).toContain('<a href="#schema-Error">Error</a>');
    expect(page).toContain('id="schema-Error"');
  });

  it('shows the code spans of summaries and descriptions as code', () => {
    const page = renderApiReference(buildOpenApi([thing('Pages by `cursor`.')], { tokens: true }));
    expect(page).toContain('<p>Pages by <code>cursor</code>.</p>');
    expect(page).toContain('Bad parameter (<code>KS_API_BAD_PARAMETER</code>)');
  });

  it('escapes every text it takes from the document', () => {
    const page = renderApiReference(
      buildOpenApi([thing('<img src=x onerror="alert(1)"> & more')], { tokens: true }),
    );
    expect(page).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; more');
    expect(page).not.toContain('<img');
  });

  it('says that no operation needs a token when none are configured', () => {
    const page = renderApiReference(buildOpenApi([thing('A thing.')], { tokens: false }));
    expect(page).toContain('No tokens are configured (<code>api.tokens</code>): no operation needs one');
    expect(page).toContain('No token needed: none are configured.');
    expect(page).not.toContain('Needs a bearer token');
    expect(page).not.toContain('Authorization: Bearer');
    expect(renderApiReference(buildOpenApi([thing('A thing.')], { tokens: true }))).toContain(
      'needs <code>Authorization: Bearer &lt;token&gt;</code>',
    );
  });
});
