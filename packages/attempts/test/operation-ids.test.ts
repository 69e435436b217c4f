import { describe, expect, it } from 'vitest';
import type { Arrival, ServerAttempt } from '../src/attempt.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping, parseMapping } from '../src/mapping.ts';
import { collapseOperationIds } from '../src/operation-ids.ts';
import { serverSpan } from '../src/testing.ts';

const collapse = (operation: string, extra: RegExp[] = []) => collapseOperationIds(operation, extra);

function operationsOf(names: readonly string[], mapping = defaultMapping()): string[] {
  const spans = names.map((name, i) =>
    serverSpan({ key: `k${i}`, outcome: 'miss', name, startMillis: 1_000 + i }),
  );
  return extractAttempts(spans, mapping).attempts.map((attempt) => (attempt as ServerAttempt).operation);
}

describe('operations named by URL', () => {
  it('collapses numbers, UUIDs, hex and random tokens in a path to {id}', () => {
    expect(collapse('POST /payments/8812')).toBe('POST /payments/{id}');
    expect(collapse('POST /payments/3f2b9c1e-5d4a-4e8b-9a6f-0c1d2e3f4a5b/capture')).toBe(
      'POST /payments/{id}/capture',
    );
    expect(collapse('POST /payments/3f2b9c1e5d4a4e8b9a6f0c1d2e3f4a5b')).toBe('POST /payments/{id}');
    expect(collapse('GET /blobs/8f3a9b2c')).toBe('GET /blobs/{id}');
    expect(collapse('POST /charges/pay_2K3jf8sLqx9ZzAbc')).toBe('POST /charges/{id}');
    expect(collapse('POST /orders/01ARZ3NDEKTSV4RRFFQ69G5FAV/items/7')).toBe('POST /orders/{id}/items/{id}');
    expect(collapse('POST /invoices/INV-2024-0001')).toBe('POST /invoices/{id}');
    expect(collapse('https://api.example.com/v1/payments/8812')).toBe(
      'https://api.example.com/v1/payments/{id}',
    );
  });

  it('drops a query and a fragment, which carry ids of their own', () => {
    expect(collapse('GET /payments?id=8812&retry=1')).toBe('GET /payments');
    expect(collapse('GET /payments/8812#receipt')).toBe('GET /payments/{id}');
  });

  it('leaves route templates, words and names without a path as they are', () => {
    for (const operation of [
      'POST /payments/{id}',
      'POST /v1/payments/:paymentId/capture',
      'GET /oauth2/authorize',
      'POST /v2/payments-reconciliation/deadbeef',
      'payments.Payments/Charge',
      'ledger.charge 8812',
      'POST /',
      '/',
    ])
      expect(collapse(operation)).toBe(operation);
  });

  it('collapses the segments the mapping’s patterns match whole, and only those', () => {
    const country = [/^(?:[A-Z]{2}-[a-z]+)$/u];
    expect(collapse('GET /stores/FR-paris/stock', country)).toBe('GET /stores/{id}/stock');
    expect(collapse('GET /stores/FR-paris-nord/stock', country)).toBe('GET /stores/FR-paris-nord/stock');
  });

  it('gives ten thousand payments named by URL one operation at extraction', () => {
    const names = Array.from(
      { length: 10_000 },
      (_, i) => `POST /payments/${i.toString(16).padStart(8, '0')}${crypto.randomUUID().slice(0, 8)}/capture`,
    );
    expect(new Set(operationsOf(names))).toEqual(new Set(['POST /payments/{id}/capture']));
  });

  it('collapses an http.route that carries an id as well, and an arrival’s operation', () => {
    const spans = [
      serverSpan({ key: 'k1', outcome: 'miss', route: '/payments/8812' }),
      serverSpan({ key: 'k2', name: 'POST /payments/8813' }),
    ];
    const [decision, arrival] = extractAttempts(spans, defaultMapping()).attempts as [ServerAttempt, Arrival];
    expect(decision.operation).toBe('/payments/{id}');
    expect(arrival.kind).toBe('arrival');
    expect(arrival.operation).toBe('POST /payments/{id}');
  });
});

describe('the mapping’s operation options', () => {
  it('keeps every operation as the spans name it with collapseOperationIds off', () => {
    const off = parseMapping({ collapseOperationIds: false });
    expect(operationsOf(['POST /payments/8812', 'POST /payments/8813'], off)).toEqual([
      'POST /payments/8812',
      'POST /payments/8813',
    ]);
  });

  it('collapses what operationIdPatterns match, beside the built-in shapes', () => {
    const mapping = parseMapping({ operationIdPatterns: ['[A-Z]{2}-[a-z]+'] });
    expect(operationsOf(['GET /stores/FR-paris/stock/8812'], mapping)).toEqual([
      'GET /stores/{id}/stock/{id}',
    ]);
  });

  it('refuses patterns that are not regular expressions, by code', () => {
    const code = (value: unknown) => {
      try {
        parseMapping({ operationIdPatterns: value });
      } catch (error) {
        return (error as { code?: string }).code;
      }
      return undefined;
    };
    expect(code('[0-9]+')).toBe('KS_MAPPING_WRONG_TYPE');
    expect(code([3])).toBe('KS_MAPPING_WRONG_TYPE');
    expect(code([''])).toBe('KS_MAPPING_EMPTY_NAME');
    expect(code(['[unclosed'])).toBe('KS_MAPPING_INVALID_VALUE');
    expect(code(true)).toBe('KS_MAPPING_WRONG_TYPE');
    expect(code(['x'])).toBeUndefined();
  });
});
