import type { Attributes } from '@opentelemetry/api';
import { IdempotencyRequestError } from './errors.ts';
import { keyFromHeader } from './idempotency-key.ts';
import { IDEMPOTENCY_ATTRIBUTES } from './span-decision.ts';

/**
 * What the HTTP instrumentations' start hooks receive: an incoming message, outgoing request
 * options, or undici's request (`fetch`'s), whose headers are a flat list of names and values (a
 * value may be a list) or, in older undici, one `name: value\r\n` text.
 */
export interface RequestWithHeaders {
  readonly headers?:
    | Readonly<Record<string, unknown>>
    | readonly (string | readonly string[])[]
    | string
    | undefined;
}

/**
 * `{ 'idempotency.key': key }` for a request that carries an Idempotency-Key header, else `{}`:
 * made for `@opentelemetry/instrumentation-http`'s `startIncomingSpanHook` (an IncomingMessage)
 * and `startOutgoingSpanHook` (the options given to `http.request`), and for
 * `@opentelemetry/instrumentation-undici`'s `startSpanHook` (a `fetch` request), so that the key is
 * among the span's start attributes, where a sampler sees it. Header capture (`headersToSpanAttributes`)
 * records a client's request headers only once a response arrives, so a send that timed out would
 * carry no key at all.
 *
 * An outgoing key is seen only in the options' `headers` (an object of any case, or a flat list
 * of names and values), not in a header set later with `request.setHeader`. A key the gate would
 * refuse (too long, not printable ASCII, sent twice) gives `{}`: it never executes anything.
 */
export function keyAttributesOf(request: RequestWithHeaders, header = 'idempotency-key'): Attributes {
  const value = headerValue(request.headers, header.toLowerCase());
  if (value === undefined) return {};
  try {
    const key = keyFromHeader(value);
    return key === undefined ? {} : { [IDEMPOTENCY_ATTRIBUTES.key]: key };
  } catch (error) {
    if (error instanceof IdempotencyRequestError) return {};
    throw error;
  }
}

function headerValue(
  headers: RequestWithHeaders['headers'],
  name: string,
): string | readonly string[] | undefined {
  if (headers === undefined || headers === null) return undefined;
  const values: string[] = [];
  if (typeof headers === 'string') {
    for (const line of headers.split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name)
        values.push(line.slice(colon + 1).trim());
    }
  } else if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() !== name) continue;
      const value: unknown = headers[i + 1];
      if (Array.isArray(value)) values.push(...value.map(String));
      else values.push(String(value));
    }
  } else {
    for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
      if (key.toLowerCase() !== name || value === undefined) continue;
      if (Array.isArray(value)) values.push(...value.map(String));
      else values.push(String(value));
    }
  }
  if (values.length === 0) return undefined;
  return values.length === 1 ? values[0] : values;
}
