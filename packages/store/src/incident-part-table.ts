import type { Incident } from '@keyscope/detector';
import type { Database } from 'better-sqlite3';
import { StatementCache } from './statement-cache.ts';

/**
 * The Kafka serve role's incident parts: each detect partition's view of an incident, kept per
 * (incident, partition) until that partition retracts it, and merged into the incident the API
 * serves (services/analyzer/src/kafka/incidents-materializer.ts).
 */
export interface IncidentParts {
  /** Stores a partition's part of the incident, replacing the one it had. */
  put(incidentId: string, partition: number, part: Incident): void;
  /** Forgets a partition's part of the incident (the partition retracted it). */
  delete(incidentId: string, partition: number): void;
  /** Every partition's part of the incident, in partition order; empty when none holds it. */
  of(incidentId: string): Incident[];
  /** The parts a partition holds, by incident id, in id order. */
  heldBy(partition: number): { incidentId: string; part: Incident }[];
}

/** The `kafka_incident_parts` table (migrations.ts). */
export class IncidentPartTable implements IncidentParts {
  readonly #statements: StatementCache;

  constructor(db: Database) {
    this.#statements = new StatementCache(db);
  }

  put(incidentId: string, partition: number, part: Incident): void {
    this.#statements
      .get(
        `INSERT INTO kafka_incident_parts (incident_id, partition, body) VALUES (?, ?, ?)
         ON CONFLICT (incident_id, partition) DO UPDATE SET body = excluded.body`,
      )
      .run(incidentId, partition, JSON.stringify(part));
  }

  delete(incidentId: string, partition: number): void {
    this.#statements
      .get('DELETE FROM kafka_incident_parts WHERE incident_id = ? AND partition = ?')
      .run(incidentId, partition);
  }

  of(incidentId: string): Incident[] {
    return (
      this.#statements
        .get('SELECT body FROM kafka_incident_parts WHERE incident_id = ? ORDER BY partition')
        .pluck()
        .all(incidentId) as string[]
    ).map((body) => JSON.parse(body) as Incident);
  }

  heldBy(partition: number): { incidentId: string; part: Incident }[] {
    const rows = this.#statements
      .get('SELECT incident_id, body FROM kafka_incident_parts WHERE partition = ? ORDER BY incident_id')
      .all(partition) as { incident_id: string; body: string }[];
    return rows.map((row) => ({ incidentId: row.incident_id, part: JSON.parse(row.body) as Incident }));
  }
}
