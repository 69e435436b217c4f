import type { Outcome } from '@keyscope/attempts';
import {
  EVENT_PATTERN,
  ensureGlyphDefinitions,
  failedEndGlyph,
  outcomeGlyph,
  sendGlyph,
} from './attempt-glyphs.ts';
import { el, svg } from './element-builder.ts';
import { OUTCOME_LABELS } from './vocabulary.ts';

/** The timeline's key, drawn with the timeline's own glyphs. */
export function timelineLegend(): HTMLElement {
  ensureGlyphDefinitions();
  const swatch = (...shapes: SVGElement[]) =>
    svg(
      'svg',
      { width: 28, height: 18, viewBox: '0 0 28 18', 'aria-hidden': 'true', class: 'legend-swatch timeline' },
      ...shapes,
    );
  const outcomes: Outcome[] = ['miss', 'hit', 'in_progress', 'mismatch', 'error'];
  const entries: [SVGElement, string][] = [
    ...outcomes.map((outcome): [SVGElement, string] => [
      swatch(
        svg('rect', { x: 8, y: 7, width: 18, height: 4, class: `bar bar-${outcome}` }),
        outcomeGlyph(outcome, 9, 9),
      ),
      `${OUTCOME_LABELS[outcome]}${outcome === 'miss' ? ' — the mutation ran' : ''}`,
    ]),
    [
      swatch(svg('rect', { x: 2, y: 1, width: 24, height: 16, class: 'arrival-band' })),
      'request on that node',
    ],
    [
      swatch(
        svg('rect', { x: 6, y: 7.5, width: 16, height: 3, class: 'bar bar-send' }),
        sendGlyph(7, 9),
        failedEndGlyph(22, 9),
      ),
      'client send, ✕ where it timed out or failed',
    ],
    [
      swatch(
        svg('rect', {
          x: 1,
          y: 1,
          width: 26,
          height: 16,
          class: 'event-window',
          fill: `url(#${EVENT_PATTERN})`,
        }),
      ),
      'routing event window (failover)',
    ],
    [swatch(svg('path', { d: 'M2,14 L26,4', class: 'connector' })), "selected key's attempts in time order"],
  ];
  return el(
    'ul',
    { class: 'legend', 'aria-label': 'Timeline legend' },
    ...entries.map(([shape, text]) => el('li', {}, shape, el('span', {}, text))),
  );
}
