import { apiGet } from './api-client.ts';
import type { UiConfig } from './api-types.ts';
import { renderIncidentPage } from './incident-page.ts';
import { renderIncidentsPage } from './incidents-page.ts';
import { renderKeyPage } from './key-page.ts';
import { showPageFailure } from './page-failure.ts';
import { clearNotice, listenForKeySearch, showSession } from './page-frame.ts';
import { renderRoutingEventsPage } from './routing-events-page.ts';
import { renderScopesPage } from './scopes-page.ts';

/** The page a path names; alerts link to /incidents/<id>, so that path is a contract. */
type Route = (config: UiConfig) => Promise<void>;

function routeOf(pathname: string): Route | null {
  if (pathname === '/' || pathname === '') return renderIncidentsPage;
  if (pathname === '/scopes') return renderScopesPage;
  if (pathname === '/routing-events') return renderRoutingEventsPage;
  if (pathname === '/keys') {
    const value = new URLSearchParams(location.search).get('key');
    return value === null || value === '' ? null : (config) => renderKeyPage(config, value);
  }
  const incident = /^\/incidents\/([^/]+)$/.exec(pathname);
  if (incident !== null) {
    const id = decodeSegment(incident[1]!);
    return id === null ? null : (config) => renderIncidentPage(config, id);
  }
  const key = /^\/keys\/(.+)$/.exec(pathname);
  if (key !== null) {
    const value = decodeSegment(key[1]!);
    return value === null ? null : (config) => renderKeyPage(config, value);
  }
  return null;
}

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

async function start(): Promise<void> {
  clearNotice();
  try {
    // ui-config is the first call: it says who the token is, or answers 401 for the token prompt.
    const config = await apiGet<UiConfig>('/api/v1/ui-config');
    showSession(config);
    const route = routeOf(location.pathname);
    if (route === null) {
      showPageFailure(new Error(`keyscope has no page at ${location.pathname}`), start);
      return;
    }
    await route(config);
  } catch (error) {
    showSession(null);
    showPageFailure(error, () => void start());
  }
}

listenForKeySearch();
void start();
