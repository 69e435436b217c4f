import type { Outcome } from '@keyscope/attempts';
import { svg } from './element-builder.ts';

/**
 * The shapes of the timeline, shared with its legend so the two cannot drift apart. Every outcome
 * has its own shape and fill pattern, so executions, replays and refusals read without colour.
 */

const DEFS_ID = 'keyscope-timeline-defs';
export const PROGRESS_PATTERN = 'ks-hatch-progress';
export const EVENT_PATTERN = 'ks-hatch-event';
export const RISK_PATTERN = 'ks-hatch-risk';
export const ARROW_MARKER = 'ks-arrow';

/** Patterns and markers live in one hidden SVG: `url(#id)` resolves document-wide. */
export function ensureGlyphDefinitions(): void {
  if (document.getElementById(DEFS_ID) !== null) return;
  const defs = svg(
    'svg',
    { id: DEFS_ID, width: 0, height: 0, 'aria-hidden': 'true', focusable: 'false', class: 'glyph-defs' },
    svg(
      'defs',
      {},
      svg(
        'pattern',
        {
          id: PROGRESS_PATTERN,
          width: 4,
          height: 4,
          patternUnits: 'userSpaceOnUse',
          patternTransform: 'rotate(45)',
        },
        svg('rect', { width: 4, height: 4, class: 'pattern-ground' }),
        svg('line', { x1: 0, y1: 0, x2: 0, y2: 4, class: 'pattern-progress-line' }),
      ),
      svg(
        'pattern',
        {
          id: EVENT_PATTERN,
          width: 10,
          height: 10,
          patternUnits: 'userSpaceOnUse',
          patternTransform: 'rotate(-45)',
        },
        svg('rect', { width: 10, height: 10, class: 'pattern-event-ground' }),
        svg('line', { x1: 0, y1: 0, x2: 0, y2: 10, class: 'pattern-event-line' }),
      ),
      svg(
        'pattern',
        {
          id: RISK_PATTERN,
          width: 5,
          height: 5,
          patternUnits: 'userSpaceOnUse',
          patternTransform: 'rotate(45)',
        },
        svg('rect', { width: 5, height: 5, class: 'pattern-risk-ground' }),
        svg('line', { x1: 0, y1: 0, x2: 0, y2: 5, class: 'pattern-risk-line' }),
      ),
      svg(
        'marker',
        {
          id: ARROW_MARKER,
          viewBox: '0 0 10 10',
          refX: 10,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: 'auto-start-reverse',
        },
        svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'connector-arrow' }),
      ),
    ),
  );
  document.body.append(defs);
}

/** A server attempt's mark at its start: ■ executed, ○ replayed, ▲ in progress, ◇ mismatch, ✕ error. */
export function outcomeGlyph(outcome: Outcome, cx: number, cy: number): SVGElement {
  const className = `glyph glyph-${outcome}`;
  switch (outcome) {
    case 'miss':
      return svg('rect', { x: cx - 6, y: cy - 6, width: 12, height: 12, class: className });
    case 'hit':
      return svg('circle', { cx, cy, r: 6, class: className });
    case 'in_progress':
      return svg('path', {
        d: `M${cx},${cy - 7} L${cx + 7},${cy + 6} L${cx - 7},${cy + 6} z`,
        class: className,
      });
    case 'mismatch':
      return svg('path', {
        d: `M${cx},${cy - 7} L${cx + 7},${cy} L${cx},${cy + 7} L${cx - 7},${cy} z`,
        class: className,
      });
    case 'error':
      return svg('path', {
        d: `M${cx - 5},${cy - 5} L${cx + 5},${cy + 5} M${cx - 5},${cy + 5} L${cx + 5},${cy - 5}`,
        class: className,
      });
  }
}

/** A client send: a right-pointing wedge (the request leaving the client). */
export function sendGlyph(cx: number, cy: number): SVGElement {
  return svg('path', {
    d: `M${cx - 5},${cy - 6} L${cx + 6},${cy} L${cx - 5},${cy + 6} z`,
    class: 'glyph glyph-send',
  });
}

/** Where a client send ended without an answer (timeout) or with an error. */
export function failedEndGlyph(cx: number, cy: number): SVGElement {
  return svg('path', {
    d: `M${cx - 4},${cy - 4} L${cx + 4},${cy + 4} M${cx - 4},${cy + 4} L${cx + 4},${cy - 4}`,
    class: 'glyph glyph-failed-end',
  });
}
