import { describe, expect, it } from 'vitest';
import { renderApiReference } from '../../src/api/api-reference.ts';
import { buildOpenApi } from '../../src/api/openapi.ts';

describe('renderApiReference', () => {
  it('shows each parameter with its schema in words, and whether the operation needs a token', () => {
    const page = renderApiReference(
      buildOpenApi([
        {
          method: 'GET',
          url: '/api/v1/things/:id',
          summary: 'One thing.',
          query: {
            type: 'object',
            properties: {
              limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 },
              status: { type: 'string', enum: ['open', 'resolved'] },
            },
          },
        },
        { method: 'GET', url: '/healthz', summary: 'Liveness.', public: true },
      ]),
    );
    expect(page).toContain('data-operation="GET /api/v1/things/{id}"');
    expect(page).toMatch(
      /data-parameter="limit"><td><code>limit<\/code><\/td><td>query<\/td><td>no<\/td><td>integer, 1 to 500, default <code>50<\/code>/,
    );
    expect(page).toContain('one of <code>open</code>, <code>resolved</code>');
    expect(page).toMatch(/data-parameter="id">.*<td>path<\/td><td>yes<\/td>/);
    expect(page).toMatch(
      /id="get-api-v1-things-id"[\s\S]*Needs a bearer token[\s\S]*id="get-healthz"[\s\S]*Public/,
    );
    // Refusals link to the error body's schema, which the page shows.
    expect(page).toContain('<a href="#schema-Error">Error</a>');
    expect(page).toContain('id="schema-Error"');
  });

  it('shows the code spans of summaries and descriptions as code', () => {
    const page = renderApiReference(
      buildOpenApi([{ method: 'GET', url: '/x', summary: 'Pages by `cursor`.' }]),
    );
    expect(page).toContain('<p>Pages by <code>cursor</code>.</p>');
    expect(page).toContain('Bad parameter (<code>KS_API_BAD_PARAMETER</code>)');
  });

  it('escapes every text it takes from the document', () => {
    const page = renderApiReference(
      buildOpenApi([{ method: 'GET', url: '/x', summary: '<img src=x onerror="alert(1)"> & more' }]),
    );
    expect(page).toContain('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; more');
    expect(page).not.toContain('<img');
  });
});
