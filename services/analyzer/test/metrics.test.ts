import { describe, expect, it } from 'vitest';
import { createMetrics } from '../src/metrics.ts';

const transport = (spansAccepted: number) => ({
  payloadsReceived: 3,
  payloadsAccepted: 2,
  payloadsRejected: { KS_OTLP_TRUNCATED: 1 },
  spansAccepted,
  spansRejected: { consumer_refused: 4 },
  logRecordsAccepted: 6,
  logRecordsRejected: { KS_SPAN_TOO_OLD: 2 },
  bytesReceivedCompressed: 100,
  bytesReceivedDecompressed: 400,
});

describe('Prometheus metrics', () => {
  it('exports the stages’ counters as absolute totals at each scrape', async () => {
    let accepted = 10;
    const metrics = createMetrics({
      ingest: () => ({ http: transport(accepted), grpc: transport(0) }),
      queue: () => ({ requests: 2, spans: 700 }),
      pipeline: () => ({
        spans: accepted,
        attempts: { server: 3, arrival: 1, client: 2, effect: 0 },
        sendLinks: { linked: 1, evicted: 4, expired: 0, sends: 2, keys: 7 },
        duplicateSpans: 1,
        invalidValues: {},
        refusedSpans: { KS_SPAN_TOO_OLD: 1 },
        truncatedValues: 3,
        findings: {
          cross_store_duplicate: 2,
          same_store_duplicate: 0,
          absorbed_duplicate: 0,
          suspected_duplicate: 0,
          key_collision: 0,
          scope_violation: 0,
        },
        storeWriteSeconds: [0.002, 0.004],
      }),
      detector: () => ({
        keysInMemory: 50,
        suspectKeys: 3,
        attempts: 6,
        duplicateAttempts: 0,
        evictedKeys: 0,
        rebuiltKeys: 0,
        cappedAttempts: 190_000,
        hotKeys: 1,
        findingStoresLeftOut: 0,
        findingNodesLeftOut: 0,
        incidentStoresLeftOut: 0,
        incidentNodesLeftOut: 0,
        internedNames: 12,
        coverageEntries: 40,
        coverageEvictedEntries: 7,
        tiers: 4,
        tierOverflowAttempts: 0,
        routingFollowUpKeys: 2,
        routingFollowUpDropped: 3,
        regroupedKeys: 9,
        watermarkUnixMillis: 0,
      }),
      openIncidents: () => 1,
      buffered: () => ({ http: 0, grpc: 3_000_000 }),
      alerts: () => ({
        pagerduty: { delivered: 1, retried: 2, abandoned: 0, deferred: 0, refreshed: 0, refresh_failed: 0 },
      }),
      pendingAlerts: () => 0,
    });
    const first = await metrics.render();
    expect(first).toContain('keyscope_spans_received_total{transport="http"} 10');
    expect(first).toContain('keyscope_spans_rejected_total{transport="http",reason="consumer_refused"} 4');
    expect(first).toContain(
      'keyscope_payloads_rejected_total{transport="grpc",reason="KS_OTLP_TRUNCATED"} 1',
    );
    expect(first).toContain('keyscope_log_records_received_total{transport="grpc"} 6');
    expect(first).toContain(
      'keyscope_log_records_rejected_total{transport="http",reason="KS_SPAN_TOO_OLD"} 2',
    );
    expect(first).toContain('keyscope_received_bytes_total{transport="http",form="decompressed"} 400');
    expect(first).toContain('keyscope_ingest_queue_depth{unit="spans"} 700');
    expect(first).toContain('keyscope_ingest_buffered_bytes{transport="grpc"} 3000000');
    expect(first).toContain('keyscope_attempts_total{kind="server"} 3');
    expect(first).toContain('keyscope_findings_total{class="cross_store_duplicate"} 2');
    expect(first).toContain('keyscope_values_truncated_total 3');
    expect(first).toContain('keyscope_send_links_total{result="linked"} 1');
    expect(first).toContain('keyscope_send_links_total{result="evicted"} 4');
    expect(first).toContain('keyscope_open_incidents 1');
    expect(first).toContain('keyscope_detector_keys{state="in_memory"} 50');
    expect(first).toContain('keyscope_detector_interned_names 12');
    expect(first).toContain('keyscope_hot_keys 1');
    expect(first).toContain('keyscope_key_attempts_capped_total 190000');
    expect(first).toContain('keyscope_evidence_coverage_pending_attempts 40');
    expect(first).toContain('keyscope_evidence_coverage_evicted_total 7');
    expect(first).toContain('keyscope_routing_followup_keys 2');
    expect(first).toContain('keyscope_routing_followup_dropped_total 3');
    expect(first).toContain('keyscope_regrouped_keys_waiting 9');
    expect(first).toContain('keyscope_alert_deliveries_total{sink="pagerduty",outcome="retried"} 2');
    expect(first).toContain('keyscope_store_write_seconds_count 2');
    accepted = 25;
    expect(await metrics.render()).toContain('keyscope_spans_received_total{transport="http"} 25');
  });

  it('exports each tier’s evidence coverage, leaving out figures with nothing to count', async () => {
    const coverage = {
      keysOneIn: 1,
      arrivals: 50,
      arrivalsWithDecision: 6,
      requests: 0,
      requestsWithSend: 0,
      keys: 40,
      keysFullyVisible: 5,
      sends: 50,
      sendsWithServerSpan: 50,
      arrivalsWithDecisionRatio: 0.12,
      requestsWithSendRatio: null,
      keysFullyVisibleRatio: 0.125,
      sendsWithServerSpanRatio: 1,
    };
    const metrics = createMetrics({
      scopes: () => [
        {
          service: 'payments',
          operation: '/payments',
          declaredScope: 'node',
          scopeFrom: 'span',
          spansSeen: true,
          declaredCounts: { node: 40 },
          keys: 40,
          keysSpanning: { nodes: 0, clusters: 0, regions: 0 },
          smallestCoveringScope: 'node',
          keysAtRisk: 0,
          status: 'sound',
          coverage,
          replayHeader: null,
        },
        {
          service: 'refunds',
          operation: 'POST /refunds',
          declaredScope: 'unknown',
          scopeFrom: 'unknown',
          spansSeen: true,
          declaredCounts: {},
          keys: 40,
          keysSpanning: { nodes: 0, clusters: 0, regions: 0 },
          smallestCoveringScope: 'node',
          keysAtRisk: 0,
          status: 'unknown',
          coverage,
          replayHeader: { verdict: 'missing', replays: 0, repeats: 12, advice: 'set it with setHeader' },
        },
        {
          service: 'orders',
          operation: 'POST /orders',
          declaredScope: 'unknown',
          scopeFrom: 'unknown',
          spansSeen: true,
          declaredCounts: {},
          keys: 40,
          keysSpanning: { nodes: 0, clusters: 0, regions: 0 },
          smallestCoveringScope: 'node',
          keysAtRisk: 0,
          status: 'unknown',
          coverage,
          replayHeader: { verdict: 'captured', replays: 3, repeats: 12, advice: null },
        },
      ],
    });
    const text = await metrics.render();
    expect(text).toContain(
      'keyscope_evidence_coverage_ratio{service="payments",operation="/payments",figure="arrivals_with_decision"} 0.12',
    );
    expect(text).toContain(
      'keyscope_evidence_coverage_ratio{service="payments",operation="/payments",figure="keys_fully_visible"} 0.125',
    );
    expect(text).toContain(
      'keyscope_evidence_coverage_ratio{service="payments",operation="/payments",figure="sends_with_server_span"} 1',
    );
    expect(text).not.toContain('figure="requests_with_send"');
    expect(text).toContain('keyscope_replay_header_missing{service="refunds",operation="POST /refunds"} 1');
    expect(text).not.toMatch(/keyscope_replay_header_missing\{service="(payments|orders)"/);
  });
});
