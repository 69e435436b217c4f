import { ApiError, apiPost } from './api-client.ts';
import type { IncidentJson, UiConfig } from './api-types.ts';
import { el } from './element-builder.ts';
import { describeRefusal } from './page-failure.ts';
import { showNotice } from './page-frame.ts';
import { promptForToken } from './token-prompt.ts';

type Action = 'ack' | 'resolve';

/**
 * Acknowledge / Resolve for one incident. They are offered whatever the token's role: the API
 * decides, and a refusal (a read token, a tenant token) is shown in the notice with the API's
 * reason, instead of buttons silently missing for someone who expected them.
 */
export function incidentActions(
  config: UiConfig,
  incident: IncidentJson,
  changed: (incident: IncidentJson) => void,
): HTMLElement | null {
  if (incident.status !== 'open') return null;
  const readOnly = config.principal.role !== 'admin';
  const hint = readOnly ? ' (your token is read-only: the API will refuse)' : '';
  const group = el('div', { class: 'actions', role: 'group', 'aria-label': `Actions for ${incident.title}` });
  const button = (action: Action, label: string) => {
    const element = el(
      'button',
      {
        type: 'button',
        class: action === 'resolve' ? 'secondary' : 'primary',
        'data-action': action,
        'data-incident': incident.id,
        title: `${label} this incident${hint}`,
      },
      label,
    );
    element.addEventListener('click', () => void run(action, element));
    return element;
  };
  const run = async (action: Action, element: HTMLButtonElement) => {
    element.disabled = true;
    try {
      const updated = await apiPost<IncidentJson>(
        `/api/v1/incidents/${encodeURIComponent(incident.id)}/${action}`,
      );
      showNotice('success', `${action === 'ack' ? 'Acknowledged' : 'Resolved'}: ${updated.title}`);
      changed(updated);
    } catch (error) {
      element.disabled = false;
      if (error instanceof ApiError && error.status === 401) {
        promptForToken(error, () => location.reload());
        return;
      }
      const what = action === 'ack' ? 'acknowledge' : 'resolve';
      showNotice('error', `the API refused to ${what} this incident: ${describeRefusal(error)}`);
    }
  };
  if (!incident.acknowledged) group.append(button('ack', 'Acknowledge'));
  group.append(button('resolve', 'Resolve'));
  return group;
}
