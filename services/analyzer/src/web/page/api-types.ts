import type { Arrival, ClientAttempt, ServerAttempt, SideEffect } from '@keyscope/attempts';
import type { FindingClass, ScopeReportOverflow, ScopeReportRow } from '@keyscope/detector';
import type { OutboxDelivery } from '@keyscope/store';
import type {
  presentFinding,
  presentIncident,
  presentStoredRoutingEvent,
} from '../../presentation/present.ts';
import type { UiConfig } from '../web-routes.ts';

/*
 * The JSON the page reads, derived from the API's own presenters where they are precise, so a change
 * of the API's shape fails the page's type check instead of rendering `undefined` at 3 a.m.
 */

type Presented<A> = Omit<A, 'startUnixMillis' | 'endUnixMillis' | 'placement'> & {
  service: string;
  node: string;
  cluster: string;
  region: string;
  zone: string;
  start: string;
  end: string;
  durationMillis: number;
};

// presentAttempt spreads a union, which TypeScript flattens; this keeps each kind's own fields.
export type AttemptJson =
  | Presented<ServerAttempt>
  | Presented<Arrival>
  | Presented<ClientAttempt>
  | Presented<SideEffect>;
export type ServerAttemptJson = Presented<ServerAttempt>;
export type ClientAttemptJson = Presented<ClientAttempt>;

export type FindingJson = Omit<ReturnType<typeof presentFinding>, 'attempts'> & { attempts: AttemptJson[] };
export type RoutingEventJson = NonNullable<ReturnType<typeof presentFinding>['routing']['event']>;
export type IncidentJson = ReturnType<typeof presentIncident>;
/** An item of `/api/v1/routing-events`: the event and the incidents that cite it. */
export type RoutingEventListJson = ReturnType<typeof presentStoredRoutingEvent>;
export type IncidentDetailJson = IncidentJson & {
  /** Its first findings, each with its first attempts (`attemptsTotal` counts them all). */
  findings: FindingJson[];
  /** Where `/api/v1/findings?incident=` continues after `findings`; null when they are all. */
  findingsNextCursor: string | null;
  alerts: OutboxDelivery[];
};

export interface KeyLookupJson {
  key: string;
  /** Whether keyscope holds any attempt of the key. */
  seen: boolean;
  /** How far back the stored attempts reach; null when none is stored. */
  evidenceSince: string | null;
  executions: number;
  unconfirmedExecutions: number;
  ranTwice: boolean;
  attempts: AttemptJson[];
  findings: FindingJson[];
}

export interface ListJson<T> {
  items: T[];
  nextCursor: string | null;
}

export type ScopeRowJson = ScopeReportRow;
export type ScopeOverflowJson = ScopeReportOverflow;

/** `GET /api/v1/scopes`: a page of tiers, and the tiers past `detector.maxTiers`, summed. */
export interface ScopesJson extends ListJson<ScopeRowJson> {
  overflow: ScopeOverflowJson | null;
}
export type { FindingClass, UiConfig };

export interface ApiErrorJson {
  error: { code: string; message: string };
}
