import { clientSpan, resource, serverSpan } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ConfiguredKeyscope,
  executedTwice,
  type Settings,
  startConfigured,
  until,
} from './configured-keyscope.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

let keyscope: ConfiguredKeyscope | undefined;
let clock = Date.now();
afterEach(async () => {
  await keyscope?.stop();
  keyscope = undefined;
});

/** Starts keyscope on a clock the test moves, from `clockAt` on. */
async function start(settings: Settings, clockAt = Date.now()): Promise<ConfiguredKeyscope> {
  clock = clockAt;
  keyscope = await startConfigured(settings, { now: () => clock });
  return keyscope;
}

let nextId = 1;
/** `count` keys, each executed once now. */
function onceEach(prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) => {
    const id = nextId++;
    return serverSpan({ trace: id, id, key: `${prefix}-${i}`, outcome: 'miss', startMillis: clock - 1_000 });
  });
}

async function findingKeys(running: ConfiguredKeyscope): Promise<string[]> {
  const findings = await running.json<{ items: Array<{ key: string }> }>('/api/v1/findings');
  return findings.items.map((finding) => finding.key).sort();
}

describe('detector.*', () => {
  it('detector.retryHorizonMillis: spans three hours old are refused when it is one hour', async () => {
    const running = await start({ env: { KEYSCOPE_DETECTOR_RETRY_HORIZON_MILLIS: String(HOUR) } });
    // Spans are taken from the horizon plus spans.maxLateMillis (1 h) back: 25 h by default.
    const old = await running.exportSpans(
      executedTwice('three-hours-old', { startMillis: clock - 3 * HOUR }),
    );
    expect(old.body.partialSuccess?.rejectedSpans).toBe(2);
    expect(old.body.partialSuccess?.errorMessage).toContain('KS_SPAN_TOO_OLD');
    const recent = await running.exportSpans(executedTwice('an-hour-old', { startMillis: clock - HOUR }));
    expect(recent.body.partialSuccess).toBeUndefined();
    expect(await findingKeys(running)).toEqual(['an-hour-old']);
  });

  it('detector.maxKeys: at most that many keys are held in memory', async () => {
    const running = await start({ env: { KEYSCOPE_DETECTOR_MAX_KEYS: '5' } });
    expect((await running.exportSpans(onceEach('many', 20))).status).toBe(200);
    // The default holds all twenty.
    const held = await running.metric('keyscope_detector_keys');
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThanOrEqual(5);
  });

  it('detector.maxKeys: at most that many keys with a send answered 502 are followed for routing events inferred later, the rest dropped and counted', async () => {
    const running = await start({ env: { KEYSCOPE_DETECTOR_MAX_KEYS: '5' } });
    const sends = Array.from({ length: 20 }, (_, i) => {
      const id = nextId++;
      // A proxy's 502 with no server span under it: the send may have run on a node that went down.
      return clientSpan({
        trace: id,
        id,
        key: `unanswered-${i}`,
        statusCode: 502,
        error: true,
        resource: resource({ service: 'checkout', instance: 'checkout-1' }),
        startMillis: clock - 1_000,
      });
    });
    expect((await running.exportSpans(sends)).status).toBe(200);
    expect(await running.metric('keyscope_routing_followup_keys')).toBe(5);
    expect(await running.metric('keyscope_routing_followup_dropped_total')).toBe(15);
  });

  it('detector.maxAttemptsPerKey: a key past it is hot and its later attempts counted, not kept', async () => {
    const running = await start({ file: { detector: { maxAttemptsPerKey: 3 } } });
    const spans = Array.from({ length: 6 }, () => {
      const id = nextId++;
      return serverSpan({ trace: id, id, key: 'constant', outcome: 'miss', startMillis: clock - 1_000 });
    });
    expect((await running.exportSpans(spans)).status).toBe(200);
    expect(await running.metric('keyscope_hot_keys')).toBe(1);
    expect(await running.metric('keyscope_key_attempts_capped_total')).toBe(3);
  });

  it('detector.coverageKeysOneIn: set to 1, the evidence coverage holds an attempt of every key', async () => {
    const running = await start({ file: { detector: { coverageKeysOneIn: 1 } } });
    expect((await running.exportSpans(onceEach('covered', 16))).status).toBe(200);
    // The default samples one key in eight: about two of these sixteen.
    expect(await running.metric('keyscope_evidence_coverage_pending_attempts')).toBe(16);
  });

  it('detector.maxCoverageEntries: past it the oldest held attempts are counted early', async () => {
    const running = await start({
      file: { detector: { coverageKeysOneIn: 1 } },
      env: { KEYSCOPE_DETECTOR_MAX_COVERAGE_ENTRIES: '10' },
    });
    expect((await running.exportSpans(onceEach('evicted', 16))).status).toBe(200);
    expect(await running.metric('keyscope_evidence_coverage_pending_attempts')).toBeLessThanOrEqual(10);
    expect(await running.metric('keyscope_evidence_coverage_evicted_total')).toBeGreaterThanOrEqual(6);
  });

  it('detector.incidentBucketMillis: findings two hours apart are one incident in ten-day buckets', async () => {
    const bucket = 10 * DAY;
    const bucketStart = Math.floor(Date.now() / bucket) * bucket;
    const running = await start(
      { env: { KEYSCOPE_DETECTOR_INCIDENT_BUCKET_MILLIS: String(bucket) } },
      bucketStart + 4 * HOUR,
    );
    await running.exportSpans(executedTwice('early', { startMillis: bucketStart + HOUR }));
    await running.exportSpans(executedTwice('late', { startMillis: bucketStart + 3 * HOUR }));
    // Hourly buckets (the default) would make two incidents.
    const incidents = await running.json<{ items: Array<{ keys: string[] }> }>('/api/v1/incidents');
    expect(incidents.items).toHaveLength(1);
  });

  it('detector.quietPeriodMillis: an incident with no new finding for a minute resolves when set to one', async () => {
    const running = await start({ env: { KEYSCOPE_DETECTOR_QUIET_PERIOD_MILLIS: String(MINUTE) } });
    await running.exportSpans(executedTwice('quiet', { startMillis: clock - 5_000 }));
    // Two minutes on: the default (30 min) would keep it open.
    clock += 2 * MINUTE;
    await until(async () => {
      const incidents = await running.json<{ items: Array<{ status: string }> }>('/api/v1/incidents');
      return incidents.items.length === 1 && incidents.items[0]!.status === 'resolved';
    }, 5_000);
  });
});
