import type { FindingJson } from './api-types.ts';
import { el, withChildren } from './element-builder.ts';
import { EVIDENCE_LABELS } from './vocabulary.ts';

/**
 * What a suspected duplicate rests on: each piece of evidence, its strength, node and span. The
 * key page and the incident page's selected key show it the same way.
 */
export function suspicionList(suspicion: NonNullable<FindingJson['suspicion']>): HTMLElement {
  return withChildren(
    el('ul', { class: 'suspicion' }),
    suspicion.evidence.map((item) =>
      el(
        'li',
        {},
        `${EVIDENCE_LABELS[item.kind]} (${item.strength}`,
        item.node === '' ? '' : `, node ${item.node}`,
        `; span ${item.traceId}/${item.spanId})`,
      ),
    ),
  );
}
