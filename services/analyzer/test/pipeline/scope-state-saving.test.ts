import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultMapping } from '@keyscope/attempts';
import { resource, serverSpan } from '@keyscope/attempts/testing';
import { defaultDetectorConfig, type ScopeReportState, tierName } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultServeConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { DetectionPipeline } from '../../src/pipeline/detection-pipeline.ts';

const TIERS = 50_000;
const detectorConfig = { ...defaultDetectorConfig(), maxTiers: 100_000 };

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-scope-saving-'));
  path = join(dir, 'keyscope.db');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** What a run that saw `count` tiers of payments, one key each, committed. */
function savedTiers(count: number): ScopeReportState {
  return Array.from({ length: count }, (_, i) => ({
    tier: tierName('payments', `POST /op-${i}`),
    service: 'payments',
    operation: `POST /op-${i}`,
    declared: { node: 1 },
    keys: 1,
    spread: [1, 0, 0, 0],
    coverage: [0, 0, 0, 0, 1, 1, 0, 0],
  }));
}

/**
 * Records every row written to the scope report's tables, whoever writes it: triggers on the
 * file, added through a second connection. Returns what was written since the last call.
 */
function watchScopeWrites(): () => { rows: number; bytes: number } {
  const db = new BetterSqlite3(path);
  try {
    db.exec(`
      CREATE TABLE scope_write_log (bytes INTEGER NOT NULL);
      CREATE TRIGGER scope_tier_inserted AFTER INSERT ON scope_tiers
        BEGIN INSERT INTO scope_write_log VALUES (length(NEW.tier) + length(NEW.body)); END;
      CREATE TRIGGER scope_tier_updated AFTER UPDATE ON scope_tiers
        BEGIN INSERT INTO scope_write_log VALUES (length(NEW.tier) + length(NEW.body)); END;
      CREATE TRIGGER state_inserted AFTER INSERT ON state
        BEGIN INSERT INTO scope_write_log VALUES (length(NEW.body)); END;
      CREATE TRIGGER state_updated AFTER UPDATE ON state
        BEGIN INSERT INTO scope_write_log VALUES (length(NEW.body)); END;
    `);
  } finally {
    db.close();
  }
  return () => {
    const reader = new BetterSqlite3(path);
    try {
      const { rows, bytes } = reader
        .prepare('SELECT count(*) AS rows, coalesce(sum(bytes), 0) AS bytes FROM scope_write_log')
        .get() as { rows: number; bytes: number };
      reader.exec('DELETE FROM scope_write_log');
      return { rows, bytes };
    } finally {
      reader.close();
    }
  };
}

function pipelineOn(store: KeyscopeStore): DetectionPipeline {
  return new DetectionPipeline({
    mapping: defaultMapping(),
    detectorConfig,
    store,
    logger: silentLogger,
    spans: defaultServeConfig().spans,
  });
}

/** One keyed decision at one of the saved tiers, as a payload of one span. */
function oneSpan(i: number) {
  return [
    serverSpan({
      key: `order-${i}`,
      outcome: 'miss',
      scope: 'node',
      name: 'POST /op-17',
      trace: 1_000 + i,
      id: 1_000 + i,
      startMillis: Date.now() - 1_000,
      resource: resource({ service: 'payments', instance: 'payments-a' }),
    }),
  ];
}

describe('the scope report saved by the pipeline', () => {
  it('writes only the tiers a commit changed, with fifty thousand saved, before and after a restart', async () => {
    const seeded = new KeyscopeStore({ path });
    seeded.transaction(() => seeded.scopeTiers.save(savedTiers(TIERS)));
    seeded.close();
    const written = watchScopeWrites();

    const store = new KeyscopeStore({ path });
    try {
      const pipeline = pipelineOn(store);
      expect(pipeline.detector.scopeReport()).toHaveLength(TIERS);
      await pipeline.consumeSpans(oneSpan(1));
      const commit = written();
      expect(commit.rows).toBe(1);
      expect(commit.bytes).toBeLessThan(1_000);
    } finally {
      store.close();
    }

    const reopened = new KeyscopeStore({ path });
    try {
      const pipeline = pipelineOn(reopened);
      const report = pipeline.detector.scopeReport();
      expect(report).toHaveLength(TIERS);
      expect(report.find((row) => row.operation === 'POST /op-17')!.keys).toBe(2);
      await pipeline.consumeSpans(oneSpan(2));
      const commit = written();
      expect(commit.rows).toBe(1);
      expect(commit.bytes).toBeLessThan(1_000);
    } finally {
      reopened.close();
    }
  });
});
