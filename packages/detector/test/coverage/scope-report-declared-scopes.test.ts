import { extractAttempts, type Mapping, parseMapping } from '@keyscope/attempts';
import { resource, serverSpan, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/attempts/testing';
import { describe, expect, it } from 'vitest';
import { createDetector, type Detector, defaultDetectorConfig, type Finding } from '../../src/index.ts';

/**
 * A service whose spans carry only what HTTP instrumentation captures: the key as a request
 * header, the route and the status, no `idempotency.*` attribute. Its outcome comes from HTTP
 * (`inferOutcomeFromHttp`); its key scope, if anyone declares it, from the mapping.
 */
function headerOnlyRun(mapping: Mapping): Finding[] {
  return headerOnlyDetector(mapping).findings();
}

function headerOnlyDetector(mapping: Mapping): Detector {
  const attempt = (node: string, id: number, atMillis: number) =>
    serverSpan({
      trace: id,
      id,
      resource: resource({ service: 'payments', instance: node }),
      startMillis: TEST_EPOCH_UNIX_MILLIS + atMillis,
      durationMillis: 120,
      route: '/payments',
      statusCode: 201,
      attributes: { 'http.request.header.idempotency-key': ['order-7'] },
    });
  // The client gave up on node a and sent the key again to node b, a minute later.
  const spans = [attempt('payments-a', 1, 0), attempt('payments-b', 2, 60_000)];
  // As serve builds it: the mapping's declared scopes go to the scope report.
  const detector = createDetector({ ...defaultDetectorConfig(), declaredScopes: mapping.scopes });
  detector.ingest(extractAttempts(spans, mapping));
  detector.flush();
  return detector;
}

describe('a service that declares its key scope in the mapping, not on its spans', () => {
  it('finds the cross-node repeat of a node-scoped key as a cross-store duplicate', () => {
    const mapping = parseMapping({
      inferOutcomeFromHttp: true,
      scopes: [{ service: 'payments', scope: 'node' }],
    });
    const [finding] = headerOnlyRun(mapping);
    expect(finding).toMatchObject({
      class: 'cross_store_duplicate',
      stores: ['payments/node:payments-a', 'payments/node:payments-b'],
    });
  });

  it('says in the scope report where each tier’s scope comes from', () => {
    const scopeOf = (mapping: Mapping) =>
      headerOnlyDetector(mapping)
        .scopeReport()
        .map((row) => [row.declaredScope, row.scopeFrom]);
    expect(
      scopeOf(parseMapping({ inferOutcomeFromHttp: true, scopes: [{ service: 'payments', scope: 'node' }] })),
    ).toEqual([['node', 'mapping']]);
    expect(scopeOf(parseMapping({ inferOutcomeFromHttp: true }))).toEqual([['unknown', 'unknown']]);
  });

  it('flags in the scope report a declared scope whose service has sent nothing', () => {
    const mapping = parseMapping({
      inferOutcomeFromHttp: true,
      scopes: [
        { service: 'payments', scope: 'node' },
        { service: 'paymnets', scope: 'cluster' },
        { service: 'ledger', operation: 'POST /entries', scope: 'region' },
      ],
    });
    const rows = headerOnlyDetector(mapping).scopeReport();
    expect(
      rows.map((row) => [row.service, row.operation, row.declaredScope, row.keys, row.spansSeen]),
    ).toEqual([
      ['payments', '/payments', 'node', 1, true],
      ['paymnets', '', 'cluster', 0, false],
      ['ledger', 'POST /entries', 'region', 0, false],
    ]);
    expect(rows[1]).toMatchObject({ scopeFrom: 'mapping', status: 'unknown', keysAtRisk: 0 });
  });

  it('takes an operation’s own declaration over its service’s', () => {
    const mapping = parseMapping({
      inferOutcomeFromHttp: true,
      scopes: [
        { service: 'payments', scope: 'node' },
        { service: 'payments', operation: '/payments', scope: 'global' },
      ],
    });
    const [finding] = headerOnlyRun(mapping);
    expect(finding).toMatchObject({ class: 'same_store_duplicate', stores: ['payments/global'] });
    expect(finding!.cause).toBe('ttl_expired');
  });

  it('claims no cause within one store when nothing says which store the nodes used', () => {
    const detector = headerOnlyDetector(parseMapping({ inferOutcomeFromHttp: true }));
    const [finding] = detector.findings();
    expect(finding).toMatchObject({
      class: 'same_store_duplicate',
      cause: 'store_unknown',
      stores: ['payments/unknown'],
      nodes: ['payments-a', 'payments-b'],
    });
    const [incident] = detector.incidents();
    expect(incident!.advice).toContain('cannot tell whether they shared a store');
    expect(incident!.advice).not.toContain('forgotten the key');
  });
});
