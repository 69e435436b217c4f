/**
 * Fills `api.traceLinkTemplate` (`https://jaeger.example/trace/{traceId}`) for one span. Ids are
 * percent-encoded, and only http(s) results are returned, so neither a span nor a template can
 * turn a trace link into script.
 */
export function traceLink(template: string, traceId: string, spanId = ''): string | null {
  if (template === '' || traceId === '') return null;
  const url = template
    .replaceAll('{traceId}', encodeURIComponent(traceId))
    .replaceAll('{spanId}', encodeURIComponent(spanId));
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : null;
  } catch {
    return null;
  }
}
