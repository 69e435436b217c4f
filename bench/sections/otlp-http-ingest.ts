import { CountingConsumer } from '@keyscope/analyzer';
import { startLoopbackReceivers } from '../in-process-service.ts';
import { cpuSecondsSince, median } from '../measure.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';
import { spansInRequests } from '../workloads/encoded-payloads.ts';

const INGEST_TARGET_SPANS_PER_SECOND = 500_000;

/**
 * OTLP/HTTP ingest end to end into the consumer interface: the service's receivers in this
 * process, a span-counting consumer behind them, the load generator posting the decode workload's
 * payloads from its own process.
 */
export const otlpHttpIngestSection: Section = {
  name: 'otlp-http ingest',
  async run(context) {
    const { repetitions, ingest } = context.sizes;
    const workload = context.sdkExportPayloads();
    const loadGenerator = context.loadGenerator();
    await loadGenerator.load(context.payloadFile(workload));
    const consumer = new CountingConsumer();
    const receivers = await startLoopbackReceivers(consumer);
    const rates: number[] = [];
    const cpuShares: number[] = [];
    let everyRequestCounted = true;
    try {
      await loadGenerator.run(receivers.tracesUrl, ingest.warmupRequests, ingest.connections);
      for (let i = 0; i < repetitions; i++) {
        const before = consumer.counts().spans;
        const cpu = process.cpuUsage();
        const result = await loadGenerator.run(
          receivers.tracesUrl,
          ingest.requestsPerRepetition,
          ingest.connections,
        );
        const cpuSeconds = cpuSecondsSince(cpu);
        const spans = consumer.counts().spans - before;
        if (result.ok !== result.requests || spans !== spansInRequests(workload, result.requests)) {
          everyRequestCounted = false;
        }
        rates.push(spans / (result.elapsedMillis / 1000));
        cpuShares.push(cpuSeconds / (result.elapsedMillis / 1000));
      }
    } finally {
      await receivers.stop();
    }
    const rows: Row[] = [
      {
        section: 'otlp-http ingest',
        measurement: 'OTLP/HTTP protobuf → counting consumer',
        value: median(rates),
        unit: 'spans/s',
        target: { comparison: '>=', bound: INGEST_TARGET_SPANS_PER_SECOND },
        check: { ok: everyRequestCounted, what: 'every request 200 and every span counted' },
        samples: rates,
        note:
          `${ingest.requestsPerRepetition} requests of 512 spans per repetition (the decode workload), ` +
          `${ingest.connections} keep-alive connections from a load generator in its own process; spans ` +
          `counted by the consumer / time from first request to last answer. The receiver's process used ` +
          `${median(cpuShares).toFixed(2)} cores meanwhile (median)`,
      },
    ];
    return rows;
  },
};
