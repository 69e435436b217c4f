import type { Incident } from '@keyscope/detector';
import type { StoredIncident } from '@keyscope/store';
import { presentFinding, presentIncident, presentScopeRow } from '../api/present.ts';
import type { AnalysisResult } from './analysis.ts';

/**
 * `--format json`: one object with the API's shapes (docs/design.md, "Contracts"), so a script written
 * against `GET /api/v1/findings`, `/incidents` and `/scopes` reads analyze's output unchanged.
 */
export function analysisJson(result: AnalysisResult) {
  return {
    findings: result.findings.map(presentFinding),
    incidents: result.incidents.map((incident) => presentIncident(unacknowledged(incident))),
    scopes: result.scopes.map(presentScopeRow),
  };
}

/** Nobody acknowledged or resolved anything by hand in an offline run. */
function unacknowledged(incident: Incident): StoredIncident {
  return {
    ...incident,
    acknowledged: false,
    acknowledgedUnixMillis: null,
    acknowledgedBy: null,
    resolvedBy: null,
  };
}
