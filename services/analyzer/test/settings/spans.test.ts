import { clientSpan, resource, serverSpan } from '@keyscope/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, startConfigured } from './configured-keyscope.ts';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

let keyscope: ConfiguredKeyscope;
let nextId = 1;

/** A keyed SERVER span that admitted its key, starting `offsetMillis` from now. */
function keyed(options: { offsetMillis?: number; key?: string; service?: string } = {}) {
  const id = nextId++;
  const start = Date.now() + (options.offsetMillis ?? 0);
  return serverSpan({
    trace: id,
    id,
    key: options.key ?? `spans-key-${id}`,
    outcome: 'miss',
    startMillis: start,
    durationMillis: 20,
    resource: resource({ service: options.service ?? 'payments', instance: 'payments-a-1' }),
  });
}

describe('spans.* through keyscope serve', () => {
  beforeAll(async () => {
    keyscope = await startConfigured({
      file: { spans: { maxLateMillis: 3 * DAY, maxNameBytes: 32 } },
      env: {
        KEYSCOPE_SPANS_MAX_FUTURE_MILLIS: String(HOUR),
        KEYSCOPE_SPANS_MAX_KEY_BYTES: '64',
        KEYSCOPE_SPANS_MAX_VALUE_BYTES: '16',
      },
    });
  });
  afterAll(() => keyscope.stop());

  it('spans.maxLateMillis: a span two days old is taken when raised to three days', async () => {
    // The default window (the 24 h horizon plus 1 h) refuses a span two days old.
    const taken = await keyscope.exportSpans([keyed({ offsetMillis: -2 * DAY })]);
    expect(taken.status).toBe(200);
    expect(taken.body.partialSuccess).toBeUndefined();
    const refused = await keyscope.exportSpans([keyed({ offsetMillis: -5 * DAY })]);
    expect(refused.body.partialSuccess?.rejectedSpans).toBe(1);
    expect(refused.body.partialSuccess?.errorMessage).toContain('KS_SPAN_TOO_OLD');
  });

  it('spans.maxFutureMillis: a span half an hour ahead is taken when raised to an hour', async () => {
    // The default allows 5 min of clock skew.
    const taken = await keyscope.exportSpans([keyed({ offsetMillis: HOUR / 2 })]);
    expect(taken.body.partialSuccess).toBeUndefined();
    const refused = await keyscope.exportSpans([keyed({ offsetMillis: 2 * HOUR })]);
    expect(refused.body.partialSuccess?.rejectedSpans).toBe(1);
    expect(refused.body.partialSuccess?.errorMessage).toContain('KS_SPAN_IN_FUTURE');
  });

  it('spans.maxKeyBytes: a 100-byte key is refused when lowered to 64, a 60-byte one taken', async () => {
    const answer = await keyscope.exportSpans([
      keyed({ key: 'k'.repeat(100) }),
      keyed({ key: 'k'.repeat(60) }),
    ]);
    expect(answer.body.partialSuccess?.rejectedSpans).toBe(1);
    expect(answer.body.partialSuccess?.errorMessage).toContain('KS_SPAN_KEY_TOO_LONG');
    expect(await keyscope.metric('keyscope_spans_rejected_total', { reason: 'KS_SPAN_KEY_TOO_LONG' })).toBe(
      1,
    );
  });

  it('spans.maxNameBytes: a 40-byte service name is refused when lowered to 32', async () => {
    const answer = await keyscope.exportSpans([
      keyed({ service: 's'.repeat(40) }),
      keyed({ service: 's'.repeat(30) }),
    ]);
    expect(answer.body.partialSuccess?.rejectedSpans).toBe(1);
    expect(answer.body.partialSuccess?.errorMessage).toContain('KS_SPAN_NAME_TOO_LONG');
  });

  it('spans.maxValueBytes: a client attempt’s error text is cut when lowered to 16', async () => {
    const before = await keyscope.metric('keyscope_values_truncated_total');
    const id = nextId++;
    const answer = await keyscope.exportSpans([
      clientSpan({
        trace: id,
        id,
        key: `spans-key-${id}`,
        error: true,
        startMillis: Date.now(),
        durationMillis: 20,
        attributes: { 'server.address': 'payments', 'error.type': 'connection reset by peer' },
      }),
    ]);
    expect(answer.body.partialSuccess).toBeUndefined();
    // The default (4 KiB) cuts nothing here.
    expect((await keyscope.metric('keyscope_values_truncated_total')) - before).toBeGreaterThanOrEqual(1);
  });
});
