import { type Finding, incidentOfMembers } from '@keyscope/detector';
import type { KeyscopeStore, StoredIncident } from '@keyscope/store';

/*
 * What a principal sees of incidents. An incident is one cause for on-call — one failover is one
 * incident and one page, whichever tenants it touched — so a tenant-scoped token is shown the
 * part of it that is its own: the incident's identity, status and routing event, with keys,
 * stores, nodes, times, title and advice counted from its own findings only.
 *
 * A finding is a tenant's when every tenant its evidence names is that one (the store's tenant
 * filter). A `key_collision` names two tenants by nature, and so does any finding of a key two
 * tenants share: their attempts are both tenants' requests, so only tokens without a tenant see
 * them — and an incident of nothing but those is not shown to a tenant at all.
 *
 * Incidents themselves never split by tenant: in the scaled mode the serve role stores the
 * merged incident and every partition's findings, and the view is built from those findings.
 */

/** An incident and the findings of it a principal sees. */
export interface IncidentPart {
  incident: StoredIncident;
  findings: Finding[];
}

export function isTenantsFinding(finding: Pick<Finding, 'tenants'>, tenant: string): boolean {
  return finding.tenants.length === 1 && finding.tenants[0] === tenant;
}

/** The incident as `tenant` sees it (undefined: the whole incident), or undefined if it sees none. */
export function incidentPart(
  store: KeyscopeStore,
  incident: StoredIncident,
  tenant: string | undefined,
): IncidentPart | undefined {
  const findings = store.findings.ofIncident(incident.id, tenant);
  if (tenant === undefined) return { incident, findings };
  if (findings.length === 0) return undefined;
  return { incident: incidentOfMembers(incident, findings), findings };
}

/** The incident as `tenant` sees it, without its findings (list pages). */
export function incidentForList(
  store: KeyscopeStore,
  incident: StoredIncident,
  tenant: string | undefined,
): StoredIncident | undefined {
  if (tenant === undefined) return incident;
  return incidentPart(store, incident, tenant)?.incident;
}

/**
 * Whether `tenant` may acknowledge or resolve the incident: only when every finding in it is the
 * tenant's, because acknowledging or resolving changes the incident — and its alerts — for every
 * tenant whose keys it holds.
 */
export function tenantOwnsIncident(store: KeyscopeStore, incidentId: string, tenant: string): boolean {
  const findings = store.findings.ofIncident(incidentId);
  return findings.length > 0 && findings.every((finding) => isTenantsFinding(finding, tenant));
}
