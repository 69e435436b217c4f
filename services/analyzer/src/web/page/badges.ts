import type { Severity } from '@keyscope/detector';
import type { IncidentJson } from './api-types.ts';
import { el } from './element-builder.ts';
import { SEVERITY_MARKS } from './vocabulary.ts';

/** Severity as shape + word + colour, so it reads in grey scale and to a screen reader alike. */
export function severityBadge(severity: Severity): HTMLElement {
  const mark = SEVERITY_MARKS[severity];
  return el(
    'span',
    { class: `badge severity-${severity}` },
    el('span', { 'aria-hidden': 'true' }, `${mark.glyph} `),
    mark.label,
  );
}

export function statusBadge(incident: IncidentJson): HTMLElement {
  if (incident.status === 'resolved') {
    return el('span', { class: 'badge status-resolved' }, '✓ Resolved');
  }
  if (incident.acknowledged) return el('span', { class: 'badge status-acknowledged' }, '◐ Acknowledged');
  return el('span', { class: 'badge status-open' }, '○ Open');
}
