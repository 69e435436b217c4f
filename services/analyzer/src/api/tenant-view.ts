import { type Finding, IncidentPartView } from '@keyscope/detector';
import type { FindingExcerpt, KeyscopeStore, StoredIncident } from '@keyscope/store';

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

/**
 * Findings an incident's detail carries, each as its excerpt (its first `EXCERPT_ATTEMPTS`, 100,
 * attempts); the rest are paged from `/api/v1/findings?incident=`. Fifty keys with a hundred
 * attempts each is a timeline a person reads, and a few megabytes of JSON at most however many
 * keys, stores and attempts the incident holds.
 */
export const DETAIL_FINDINGS = 50;
/**
 * Findings a tenant's view reads whole per step, the event loop serving other requests (health
 * checks, ingest) between steps: a hot key's finding holds thousands of attempts.
 */
const VIEW_STEP_FINDINGS = 2;

/** An incident as a principal sees it, with the first of its findings. */
export interface IncidentDetail {
  incident: StoredIncident;
  findings: FindingExcerpt[];
  /** Where `/api/v1/findings?incident=` continues after `findings`; null when they are all. */
  findingsNextCursor: string | null;
}

export function isTenantsFinding(finding: Pick<Finding, 'tenants'>, tenant: string): boolean {
  return finding.tenants.length === 1 && finding.tenants[0] === tenant;
}

/** The incident as `tenant` sees it (undefined: the whole incident) with its first findings, or undefined if it sees none. */
export async function incidentDetail(
  store: KeyscopeStore,
  incident: StoredIncident,
  tenant: string | undefined,
  maxListed: number,
): Promise<IncidentDetail | undefined> {
  const seen = await incidentForList(store, incident, tenant, maxListed);
  if (seen === undefined) return undefined;
  const ids = store.findings.ids({ incidentId: incident.id, tenant }, { limit: DETAIL_FINDINGS });
  const findings: FindingExcerpt[] = [];
  for (const id of ids.items) {
    await nextTurn();
    const excerpt = store.findings.excerpt(id);
    // Gone since the ids were read (retention, a regrouping): the detail shows what is left.
    if (excerpt !== undefined) findings.push(excerpt);
  }
  return { incident: seen, findings, findingsNextCursor: ids.nextCursor };
}

/**
 * The incident as `tenant` sees it, without its findings (list pages), or undefined if it sees
 * none. A tenant's part is counted from each of its findings, read a few at a time.
 */
export async function incidentForList(
  store: KeyscopeStore,
  incident: StoredIncident,
  tenant: string | undefined,
  maxListed: number,
): Promise<StoredIncident | undefined> {
  if (tenant === undefined) return incident;
  const view = new IncidentPartView();
  let cursor: string | undefined;
  do {
    await nextTurn();
    const page = store.findings.list(
      { incidentId: incident.id, tenant },
      { limit: VIEW_STEP_FINDINGS, cursor },
    );
    for (const finding of page.items) view.add(finding);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return view.keys === 0 ? undefined : view.of(incident, maxListed);
}

/** Lets the event loop serve what is waiting (setImmediate runs after pending I/O). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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
