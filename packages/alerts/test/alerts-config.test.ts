import { isKeyscopeError } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { defaultAlertsConfig, parseAlertsConfig } from '../src/index.ts';

const ROUTING_KEY = '0123456789abcdef0123456789abcdef';

/** The code a config is refused with, and the message (which must name the field). */
function refusal(value: unknown): { code: string; message: string } {
  try {
    parseAlertsConfig(value, 'alerts');
  } catch (error) {
    if (isKeyscopeError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  throw new Error('the config was accepted');
}

describe('parseAlertsConfig', () => {
  it('gives the defaults for an absent section: no sinks, bounded batches and backoff', () => {
    const config = parseAlertsConfig(undefined);
    expect(config).toEqual(defaultAlertsConfig());
    expect(config.sinks).toEqual([]);
    expect(config.retryCapMillis).toBeGreaterThanOrEqual(config.retryBaseMillis);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('fills each sink’s defaults: its type as name, high as minimum severity, PagerDuty’s endpoint', () => {
    const config = parseAlertsConfig({
      sinks: [
        { type: 'alertmanager', url: 'http://127.0.0.1:9093' },
        { type: 'pagerduty', routingKey: ROUTING_KEY },
        { type: 'slack', url: 'https://hooks.slack.com/services/T/B/X', minSeverity: 'critical' },
        { type: 'webhook', name: 'ops', url: 'https://ops.example/hook', headers: { 'X-Token': 't' } },
      ],
      retryBaseMillis: 50,
    });
    expect(config.sinks).toEqual([
      {
        type: 'alertmanager',
        name: 'alertmanager',
        url: 'http://127.0.0.1:9093',
        minSeverity: 'high',
        resendIntervalMillis: 60_000,
      },
      {
        type: 'pagerduty',
        name: 'pagerduty',
        url: 'https://events.pagerduty.com/v2/enqueue',
        routingKey: ROUTING_KEY,
        minSeverity: 'high',
      },
      {
        type: 'slack',
        name: 'slack',
        url: 'https://hooks.slack.com/services/T/B/X',
        minSeverity: 'critical',
      },
      {
        type: 'webhook',
        name: 'ops',
        url: 'https://ops.example/hook',
        headers: { 'x-token': 't' },
        minSeverity: 'high',
      },
    ]);
    expect(config.retryBaseMillis).toBe(50);
    expect(Object.isFrozen(config.sinks[3])).toBe(true);
  });

  it('refuses a URL that is not http(s), naming the sink', () => {
    expect(
      refusal({
        sinks: [
          { type: 'slack', url: 'https://hooks.slack.com/x' },
          { type: 'webhook', url: 'ftp://x' },
        ],
      }),
    ).toEqual({
      code: 'KS_ALERTS_CONFIG_INVALID_VALUE',
      message: expect.stringContaining('alerts.sinks[1].url'),
    });
    expect(refusal({ sinks: [{ type: 'webhook', url: 'not a url' }] }).code).toBe(
      'KS_ALERTS_CONFIG_INVALID_VALUE',
    );
  });

  it('refuses unknown keys at the top and in a sink, including another type’s keys', () => {
    expect(refusal({ sink: [] })).toEqual({
      code: 'KS_ALERTS_CONFIG_UNKNOWN_KEY',
      message: expect.stringContaining("'sink'"),
    });
    expect(
      refusal({ sinks: [{ type: 'slack', url: 'https://x.example', routingKey: ROUTING_KEY }] }),
    ).toEqual({
      code: 'KS_ALERTS_CONFIG_UNKNOWN_KEY',
      message: expect.stringContaining('alerts.sinks[0]'),
    });
  });

  it('refuses values of the wrong type', () => {
    expect(refusal('yes').code).toBe('KS_ALERTS_CONFIG_WRONG_TYPE');
    expect(refusal({ sinks: { type: 'slack' } }).code).toBe('KS_ALERTS_CONFIG_WRONG_TYPE');
    expect(refusal({ sinks: ['slack'] }).code).toBe('KS_ALERTS_CONFIG_WRONG_TYPE');
    expect(refusal({ sinks: [{ type: 'slack', url: 42 }] }).code).toBe('KS_ALERTS_CONFIG_WRONG_TYPE');
    expect(refusal({ batchSize: '10' }).code).toBe('KS_ALERTS_CONFIG_WRONG_TYPE');
    expect(refusal({ sinks: [{ type: 'webhook', url: 'http://x.example', headers: ['a'] }] }).code).toBe(
      'KS_ALERTS_CONFIG_WRONG_TYPE',
    );
  });

  it('refuses a sink without its required fields', () => {
    expect(refusal({ sinks: [{ url: 'http://x.example' }] })).toEqual({
      code: 'KS_ALERTS_CONFIG_MISSING',
      message: expect.stringContaining('alerts.sinks[0].type'),
    });
    expect(refusal({ sinks: [{ type: 'alertmanager' }] }).code).toBe('KS_ALERTS_CONFIG_MISSING');
    expect(refusal({ sinks: [{ type: 'pagerduty' }] })).toEqual({
      code: 'KS_ALERTS_CONFIG_MISSING',
      message: expect.stringContaining('alerts.sinks[0].routingKey'),
    });
  });

  it('refuses invalid values: type, severity, routing key, headers, name, durations', () => {
    const invalid = [
      { sinks: [{ type: 'email', url: 'http://x.example' }] },
      { sinks: [{ type: 'slack', url: 'http://x.example', minSeverity: 'info' }] },
      { sinks: [{ type: 'pagerduty', routingKey: 'abc' }] },
      { sinks: [{ type: 'webhook', url: 'http://x.example', headers: { 'bad name': 'v' } }] },
      { sinks: [{ type: 'webhook', url: 'http://x.example', headers: { 'content-length': '1' } }] },
      { sinks: [{ type: 'webhook', url: 'http://x.example', headers: { 'x-a': 'a\r\nx-b: b' } }] },
      { sinks: [{ type: 'slack', name: 'a b', url: 'http://x.example' }] },
      { sinks: [{ type: 'alertmanager', url: 'http://x.example', resendIntervalMillis: 0 }] },
      { requestTimeoutMillis: 1.5 },
      { retryBaseMillis: 10_000, retryCapMillis: 1_000 },
    ];
    for (const value of invalid)
      expect(refusal(value).code, JSON.stringify(value)).toBe('KS_ALERTS_CONFIG_INVALID_VALUE');
  });

  it('bounds critical retries and late requests by default, following the fields they are bounded by', () => {
    expect(parseAlertsConfig({})).toMatchObject({
      requestTimeoutMillis: 10_000,
      lateRequestTimeoutMillis: 60_000,
      retryCapMillis: 300_000,
      criticalRetryCapMillis: 15_000,
    });
    // Lowering the cap or raising the request timeout alone stays valid: the defaults follow.
    expect(parseAlertsConfig({ retryCapMillis: 5_000 }).criticalRetryCapMillis).toBe(5_000);
    expect(parseAlertsConfig({ requestTimeoutMillis: 90_000 }).lateRequestTimeoutMillis).toBe(90_000);
    expect(
      parseAlertsConfig({ criticalRetryCapMillis: 20_000, lateRequestTimeoutMillis: 10_000 }),
    ).toMatchObject({ criticalRetryCapMillis: 20_000, lateRequestTimeoutMillis: 10_000 });
  });

  it('refuses a critical cap above the cap and a late-request timeout below the request timeout', () => {
    expect(refusal({ criticalRetryCapMillis: 400_000 })).toEqual({
      code: 'KS_ALERTS_CONFIG_INVALID_VALUE',
      message:
        'alerts.criticalRetryCapMillis must be at most alerts.retryCapMillis (300000), received 400000',
    });
    expect(refusal({ requestTimeoutMillis: 5_000, lateRequestTimeoutMillis: 4_000 })).toEqual({
      code: 'KS_ALERTS_CONFIG_INVALID_VALUE',
      message:
        'alerts.lateRequestTimeoutMillis must be at least alerts.requestTimeoutMillis (5000), received 4000',
    });
    expect(refusal({ criticalRetryCapMillis: 0 }).code).toBe('KS_ALERTS_CONFIG_INVALID_VALUE');
    expect(refusal({ lateRequestTimeoutMillis: '60s' }).code).toBe('KS_ALERTS_CONFIG_WRONG_TYPE');
  });

  it('refuses two sinks with one name, so two sinks of a type need names', () => {
    const slack = { type: 'slack', url: 'https://hooks.slack.com/x' };
    expect(refusal({ sinks: [slack, slack] })).toEqual({
      code: 'KS_ALERTS_CONFIG_DUPLICATE_NAME',
      message: expect.stringContaining('alerts.sinks[1].name'),
    });
    expect(parseAlertsConfig({ sinks: [slack, { ...slack, name: 'slack-2' }] }).sinks).toHaveLength(2);
  });

  it('names fields under the path it is given', () => {
    expect(refusal({ sinks: [{ type: 'webhook' }] }).message).toMatch(/^alerts\.sinks\[0\]\.url/);
    expect(() => parseAlertsConfig({ sinks: [{ type: 'webhook' }] }, 'notify')).toThrow(
      /^notify\.sinks\[0\]\.url/,
    );
  });
});
