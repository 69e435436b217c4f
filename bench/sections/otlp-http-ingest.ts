import { CountingConsumer } from '@keyscope/analyzer';
import type { DecodeOptions } from '@keyscope/otlp';
import type { BenchContext } from '../bench-context.ts';
import { type Receivers, startLoopbackReceivers } from '../in-process-service.ts';
import { cpuSecondsSince, median, pairedRatio } from '../measure.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';
import { spansInRequests } from '../workloads/encoded-payloads.ts';

const INGEST_TARGET_SPANS_PER_SECOND = 500_000;

/** One receiver configuration under test, with what it measured. */
interface Contender {
  receivers: Receivers;
  rates: number[];
  /** Cores the receivers' process used while the load ran: under 1 when other work took its core. */
  cpuShares: number[];
  /** Cores the load generator's process used meanwhile. */
  senderCpuShares: number[];
  everySpanCounted: boolean;
}

/**
 * OTLP/HTTP ingest end to end into the consumer interface: the service's receivers in this
 * process, a span-counting consumer behind them, the load generator posting the decode workload's
 * payloads from its own process. Twice: receivers decoding every attribute (what a consumer without
 * a filter gets), and decoding with the filter the service's pipeline asks for; the two take turns
 * within each repetition.
 */
export const otlpHttpIngestSection: Section = {
  name: 'otlp-http ingest',
  async run(context) {
    const { repetitions, ingest } = context.sizes;
    const workload = context.sdkExportPayloads();
    const loadGenerator = context.loadGenerator();
    await loadGenerator.load(context.payloadFile(workload));
    const filter = await context.serviceDecodeOptions();
    const full = await contender(undefined);
    const filtered = await contender(filter).catch(async (error: unknown) => {
      await full.receivers.stop();
      throw error;
    });
    const contenders = [full, filtered];
    try {
      for (const c of contenders) {
        await loadGenerator.run(c.receivers.tracesUrl, ingest.warmupRequests, ingest.connections);
      }
      for (let i = 0; i < repetitions; i++) for (const c of contenders) await measure(context, c);
    } finally {
      await Promise.all(contenders.map((c) => c.receivers.stop()));
    }

    const rows: Row[] = [
      {
        section: 'otlp-http ingest',
        measurement: 'OTLP/HTTP protobuf → counting consumer, all attributes',
        value: median(full.rates),
        unit: 'spans/s',
        target: { comparison: '>=', bound: INGEST_TARGET_SPANS_PER_SECOND },
        check: { ok: full.everySpanCounted, what: 'every request 200, every span counted' },
        samples: full.rates,
        note:
          `${ingest.requestsPerRepetition} requests of 512 spans per repetition (the decode workload), ` +
          `${ingest.connections} keep-alive connections from a load generator in its own process; spans ` +
          `the receivers accepted / time from first request to last answer. ${cpuNote(full)}`,
      },
      {
        section: 'otlp-http ingest',
        measurement: 'OTLP/HTTP protobuf → counting consumer, service decode filter',
        value: median(filtered.rates),
        unit: 'spans/s',
        target: { comparison: '>=', bound: INGEST_TARGET_SPANS_PER_SECOND },
        ratio: { value: pairedRatio(filtered.rates, full.rates), against: 'all attributes' },
        check: { ok: filtered.everySpanCounted, what: 'every request 200, every span counted' },
        samples: filtered.rates,
        note:
          "the receivers decode with the embedded service's decodeOptions, as the service runs them " +
          '(spans without a key are handed on only when they are SERVER spans). ' +
          cpuNote(filtered),
      },
    ];
    return rows;
  },
};

/** How much of a core the receivers got, and what they did per CPU-second of it. */
function cpuNote(c: Contender): string {
  const perCpuSecond = median(c.rates.map((rate, i) => rate / c.cpuShares[i]!));
  return (
    `The receivers' process used ${median(c.cpuShares).toFixed(2)} cores meanwhile (median): ` +
    `${Math.round(perCpuSecond).toLocaleString('en-US')} spans per CPU-second; the load generator's ` +
    `process used ${median(c.senderCpuShares).toFixed(2)} cores`
  );
}

async function contender(decodeOptions: DecodeOptions | undefined): Promise<Contender> {
  const receivers = await startLoopbackReceivers(new CountingConsumer(), decodeOptions);
  return { receivers, rates: [], cpuShares: [], senderCpuShares: [], everySpanCounted: true };
}

async function measure(context: BenchContext, c: Contender): Promise<void> {
  const { ingest } = context.sizes;
  const before = c.receivers.spansAccepted();
  const cpu = process.cpuUsage();
  const result = await context
    .loadGenerator()
    .run(c.receivers.tracesUrl, ingest.requestsPerRepetition, ingest.connections);
  const cpuSeconds = cpuSecondsSince(cpu);
  const spans = c.receivers.spansAccepted() - before;
  const expected = spansInRequests(context.sdkExportPayloads(), result.requests);
  if (result.ok !== result.requests || spans !== expected) c.everySpanCounted = false;
  const seconds = result.elapsedMillis / 1000;
  c.rates.push(spans / seconds);
  c.cpuShares.push(cpuSeconds / seconds);
  c.senderCpuShares.push(result.cpuMillis / result.elapsedMillis);
}
