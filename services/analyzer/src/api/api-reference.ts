import type { JsonSchema, OpenApiDocument, OpenApiOperation, OpenApiParameter } from './openapi.ts';

/** Where the reference page's stylesheet is served; the page loads nothing else. */
export const API_REFERENCE_STYLESHEET_URL = '/docs/reference.css';

/**
 * The reference page runs no script and loads only its stylesheet from this origin: a summary that
 * became markup by mistake could still not run anything or reach another host.
 */
export const API_REFERENCE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const METHODS = ['get', 'post'] as const;

/**
 * The OpenAPI document as one HTML page, rendered on the server: each operation with its
 * parameters, responses and whether it needs the bearer token (none does when the document has no
 * `security`: no tokens are configured), then the shared schemas. Every
 * text from the document is escaped.
 */
export function renderApiReference(document: OpenApiDocument): string {
  const operations = Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method];
      return operation === undefined ? [] : [{ path, method, operation }];
    }),
  );
  const nav = operations
    .map(
      ({ path, method }) =>
        `<li><a href="#${operationId(method, path)}"><span class="method method-${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></a></li>`,
    )
    .join('\n');
  const sections = operations.map(({ path, method, operation }) =>
    renderOperation(method, path, operation, document.security === undefined),
  );
  const schemas = Object.entries(document.components.schemas).map(([name, schema]) =>
    renderSchema(name, schema),
  );
  const { info } = document;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(info.title)} reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${API_REFERENCE_STYLESHEET_URL}">
</head>
<body>
<header class="reference-header">
<h1>${escapeHtml(info.title)} <span class="version">${escapeHtml(info.version)}</span></h1>
<p>${inlineMarkdown(info.description)}</p>
<p>The same description as OpenAPI ${escapeHtml(document.openapi)}: <a href="/openapi.json">/openapi.json</a> (also at <a href="/docs/json">/docs/json</a>).</p>
</header>
<div class="reference">
<nav aria-label="Operations">
<ul>
${nav}
<li><a href="#schemas">Schemas</a></li>
</ul>
</nav>
<main>
${sections.join('\n')}
<section id="schemas">
<h2>Schemas</h2>
${schemas.join('\n')}
</section>
</main>
</div>
</body>
</html>
`;
}

/** `tokenless`: no tokens are configured, so no operation needs one. */
function renderOperation(
  method: string,
  path: string,
  operation: OpenApiOperation,
  tokenless: boolean,
): string {
  const isPublic = operation.security !== undefined && operation.security.length === 0;
  const auth = tokenless
    ? 'No token needed: none are configured.'
    : isPublic
      ? 'Public: no token needed.'
      : 'Needs a bearer token.';
  const parameters =
    operation.parameters.length === 0
      ? '<p class="none">No parameters.</p>'
      : `<table>
<thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Required</th><th scope="col">Schema</th><th scope="col">Meaning</th></tr></thead>
<tbody>
${operation.parameters.map(renderParameter).join('\n')}
</tbody>
</table>`;
  const responses = Object.entries(operation.responses)
    .map(([status, response]) => {
      const content = Object.entries(response.content ?? {})
        .map(
          ([type, media]) =>
            `<code>${escapeHtml(type)}</code>${media.schema ? ` ${describeSchema(media.schema)}` : ''}`,
        )
        .join(', ');
      return `<tr data-status="${escapeHtml(status)}"><td><code>${escapeHtml(status)}</code></td><td>${inlineMarkdown(response.description)}</td><td>${content}</td></tr>`;
    })
    .join('\n');
  return `<section class="operation" id="${operationId(method, path)}" data-operation="${method.toUpperCase()} ${escapeHtml(path)}">
<h2><span class="method method-${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h2>
<p>${inlineMarkdown(operation.summary)}</p>
<p class="auth">${auth}</p>
<h3>Parameters</h3>
${parameters}
<h3>Responses</h3>
<table>
<thead><tr><th scope="col">Status</th><th scope="col">Meaning</th><th scope="col">Body</th></tr></thead>
<tbody>
${responses}
</tbody>
</table>
</section>`;
}

/** A component: its description, then one row per field, nested objects' fields as `a.b` and `a[].b`. */
function renderSchema(name: string, schema: JsonSchema): string {
  const rows = fieldRows('', schema);
  const fields =
    rows.length === 0
      ? ''
      : `
<table>
<thead><tr><th scope="col">Field</th><th scope="col">Schema</th><th scope="col">Required</th><th scope="col">Meaning</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table>`;
  // Closed until opened: the fields of every schema at once would be most of the page.
  return `<section class="schema" id="schema-${escapeHtml(name)}" data-schema="${escapeHtml(name)}">
<details>
<summary><h3>${escapeHtml(name)}</h3> ${inlineMarkdown(schema.description ?? '')}</summary>${fields}
</details>
</section>`;
}

function fieldRows(prefix: string, schema: JsonSchema): string[] {
  const rows: string[] = [];
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const path = `${prefix}${name}`;
    const required = schema.required?.includes(name) ?? false;
    rows.push(
      `<tr data-field="${escapeHtml(path)}"><td><code>${escapeHtml(path)}</code></td><td>${describeSchema(field)}</td><td>${required ? 'yes' : 'no'}</td><td>${inlineMarkdown(field.description ?? '')}</td></tr>`,
    );
    // An object declared in place has its fields listed here; a named one has its own section.
    const nested = field.items ?? field;
    if (nested.$ref === undefined && nested.properties !== undefined) {
      rows.push(...fieldRows(`${path}${field.items === undefined ? '.' : '[].'}`, nested));
    }
  }
  return rows;
}

function renderParameter(parameter: OpenApiParameter): string {
  return `<tr data-parameter="${escapeHtml(parameter.name)}"><td><code>${escapeHtml(parameter.name)}</code></td><td>${parameter.in}</td><td>${parameter.required ? 'yes' : 'no'}</td><td>${describeSchema(parameter.schema)}</td><td>${inlineMarkdown(parameter.description ?? '')}</td></tr>`;
}

/** A schema in a few words: `integer, 1 to 500, default 50`; a `$ref` links to its section. */
function describeSchema(schema: JsonSchema): string {
  if (schema.$ref !== undefined) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    return `<a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a>`;
  }
  if (schema.items !== undefined) return `array of ${describeSchema(schema.items)}`;
  const parts: string[] = [];
  if (schema.enum !== undefined)
    parts.push(
      `one of ${schema.enum.map((value) => `<code>${escapeHtml(String(value))}</code>`).join(', ')}`,
    );
  else if (schema.type !== undefined) parts.push(escapeHtml([schema.type].flat().join(' or ')));
  if (schema.format !== undefined) parts.push(escapeHtml(schema.format));
  if (schema.minimum !== undefined && schema.maximum !== undefined)
    parts.push(`${schema.minimum} to ${schema.maximum}`);
  else if (schema.minimum !== undefined) parts.push(`at least ${schema.minimum}`);
  else if (schema.maximum !== undefined) parts.push(`at most ${schema.maximum}`);
  if (schema.minLength !== undefined && schema.minLength > 0)
    parts.push(`at least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined) parts.push(`at most ${schema.maxLength} characters`);
  if (schema.default !== undefined) parts.push(`default <code>${escapeHtml(String(schema.default))}</code>`);
  return parts.join(', ');
}

/** `GET /api/v1/incidents/{id}/ack` → `get-api-v1-incidents-id-ack`. */
function operationId(method: string, path: string): string {
  return `${method}${path.replace(/[^A-Za-z0-9]+/g, '-').replace(/-$/, '')}`;
}

/** OpenAPI descriptions are CommonMark; the document's use only code spans. */
function inlineMarkdown(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}
