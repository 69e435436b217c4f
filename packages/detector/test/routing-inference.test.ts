import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { RoutingEvent } from '../src/index.ts';

const SCRIPT = fileURLToPath(new URL('./support/far-apart-activity.ts', import.meta.url));
const REPOSITORY = fileURLToPath(new URL('../../..', import.meta.url));

describe('routing inference over far-apart timestamps', () => {
  // A hang guard, not a timing: inference that walked every bucket of a 2^40-bucket gap would run
  // for hours, so the child is killed and the test fails.
  it('infers events from buckets 2^40 apart, and from starts of 0 next to 2^53 or 1e300 ms, in bounded work', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', SCRIPT], {
      cwd: REPOSITORY,
      timeout: 60_000,
    });
    const events = JSON.parse(stdout) as Record<string, RoutingEvent[]>;

    const down = events.silentFor2To40Seconds!;
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({
      type: 'node_down',
      node: 'a',
      startUnixMillis: 60_000,
      endUnixMillis: (2 ** 40 + 60) * 1000,
      ended: true,
    });
    // One bucket of node a before a silence is too little baseline to expect 20 spans of it.
    expect(events.startsAt0And2To53Millis).toEqual([]);
    expect(events.startsAt0And1e300Millis).toEqual([]);
  }, 90_000);
});
