import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resource, serverSpan } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, startConfigured } from './configured-keyscope.ts';

let keyscope: ConfiguredKeyscope | undefined;
afterEach(async () => {
  await keyscope?.stop();
  keyscope = undefined;
});

/**
 * keyscope reading outcomes from HTTP responses (`inferOutcomeFromHttp` in a mapping file), every
 * key counted by the coverage (so each repeat counts), and the settings under test.
 */
function start(detector: Record<string, unknown>): Promise<ConfiguredKeyscope> {
  return startConfigured((dir) => {
    const mapping = join(dir, 'mapping.yaml');
    writeFileSync(mapping, 'inferOutcomeFromHttp: true\n');
    return { file: { mapping: { file: mapping }, detector: { coverageKeysOneIn: 1, ...detector } } };
  });
}

const NOW = Date.now();
let nextId = 1;
/** A 200 answer of refunds on its one node, no outcome recorded, no replay header captured. */
function answered(key: string, startMillis: number) {
  const id = nextId++;
  return serverSpan({
    trace: id,
    id,
    key,
    statusCode: 200,
    route: 'POST /refunds',
    startMillis,
    resource: resource({ service: 'refunds', instance: 'refunds-a' }),
  });
}

/** `key` sent twice to the node, two seconds apart, at `startMillis`. */
function sentTwice(key: string, startMillis: number) {
  return [answered(key, startMillis), answered(key, startMillis + 2_000)];
}

/** A key answered far enough later that the coverage join counts every repeat before it. */
function traffic30sLater(startMillis: number) {
  return [answered(`later-${startMillis}`, startMillis + 30_000)];
}

interface ReplayHeaderRow {
  service: string;
  replayHeader: { verdict: string; repeats: number; replays: number; advice: string | null } | null;
}

async function refundsReplayHeader(running: ConfiguredKeyscope) {
  const scopes = await running.json<{ items: ReplayHeaderRow[] }>('/api/v1/scopes');
  return scopes.items.find((row) => row.service === 'refunds')?.replayHeader;
}

describe('detector.replayHeaderMinRepeats', () => {
  it('detector.replayHeaderMinRepeats: from the config file, a tier is reported missing its replay header at that many repeats without a replay, in /api/v1/scopes, the metric and one log line', async () => {
    const running = (keyscope = await start({ replayHeaderMinRepeats: 2 }));
    const from = NOW - 10 * 60_000;
    await running.exportSpans(sentTwice('r1', from));
    await running.exportSpans(traffic30sLater(from));
    expect(await refundsReplayHeader(running)).toMatchObject({ verdict: 'unconfirmed', repeats: 1 });
    expect(await running.metric('keyscope_replay_header_missing')).toBe(0);

    await running.exportSpans(sentTwice('r2', from + 60_000));
    await running.exportSpans(traffic30sLater(from + 60_000));
    const missing = await refundsReplayHeader(running);
    expect(missing).toMatchObject({ verdict: 'missing', repeats: 2, replays: 0 });
    expect(missing!.advice).toMatch(/writeHead/);
    expect(await running.metric('keyscope_replay_header_missing', { service: 'refunds' })).toBe(1);

    await running.exportSpans(sentTwice('r3', from + 120_000));
    await running.exportSpans(traffic30sLater(from + 120_000));
    expect(await refundsReplayHeader(running)).toMatchObject({ verdict: 'missing', repeats: 3 });
    const logged = running.lines.filter((line) => line.includes('replay header missing'));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/refunds POST \/refunds: .*writeHead.*setHeader/);
  });

  it('detector.replayHeaderMinRepeats: by default ten repeats, so two do not raise it', async () => {
    const running = (keyscope = await start({}));
    const from = NOW - 10 * 60_000;
    await running.exportSpans([...sentTwice('r1', from), ...sentTwice('r2', from + 5_000)]);
    await running.exportSpans(traffic30sLater(from + 5_000));
    expect(await refundsReplayHeader(running)).toMatchObject({ verdict: 'unconfirmed', repeats: 2 });
    expect(await running.metric('keyscope_replay_header_missing')).toBe(0);
  });
});
