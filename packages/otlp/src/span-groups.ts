import type { InstrumentationScope, Resource } from './span.ts';

/**
 * Spans grouped the way OTLP nests them: by `resource` object identity, then by `scope` object
 * identity, each level in order of first appearance. Spans decoded from one ResourceSpans share a
 * Resource object, so a decoded batch regroups exactly as it arrived. Log records group the same way.
 */
export function groupSpans<T extends { resource: Resource; scope: InstrumentationScope }>(
  spans: readonly T[],
): Map<Resource, Map<InstrumentationScope, T[]>> {
  const groups = new Map<Resource, Map<InstrumentationScope, T[]>>();
  for (const span of spans) {
    let scopes = groups.get(span.resource);
    if (scopes === undefined) {
      scopes = new Map();
      groups.set(span.resource, scopes);
    }
    const members = scopes.get(span.scope);
    if (members === undefined) scopes.set(span.scope, [span]);
    else members.push(span);
  }
  return groups;
}
