import { request } from 'node:http';
import { encodeTraces } from '@keyscope/otlp';
import { serverSpan } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, type Settings, startConfigured } from './configured-keyscope.ts';

let keyscope: ConfiguredKeyscope | undefined;
afterEach(async () => {
  await keyscope?.stop();
  keyscope = undefined;
});

let nextId = 1;
/** A payload of `count` keyed spans: long enough to decode and commit that payloads overlap. */
function payload(count: number): Uint8Array {
  const now = Date.now();
  return encodeTraces(
    Array.from({ length: count }, () => {
      const id = nextId++;
      return serverSpan({ trace: id, id, key: `admission-${id}`, outcome: 'miss', startMillis: now - 1_000 });
    }),
  );
}

/** Sends `payloads` at once; the answers' statuses and Retry-After headers. */
async function sendAtOnce(
  port: number,
  payloads: Uint8Array[],
): Promise<Array<{ status: number; retryAfter: string | undefined }>> {
  return Promise.all(
    payloads.map(
      (body) =>
        new Promise<{ status: number; retryAfter: string | undefined }>((resolve, reject) => {
          const req = request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/v1/traces',
              headers: { 'content-type': 'application/x-protobuf' },
              agent: false,
            },
            (response) => {
              response.resume();
              response.on('end', () =>
                resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] }),
              );
            },
          );
          req.on('error', reject);
          req.end(body);
        }),
    ),
  );
}

/**
 * Rounds of sixteen payloads of 2,000 spans sent at once, until one is refused (at most five
 * rounds): whether payloads overlap in the receiver depends on the machine's load.
 */
async function untilRefused(
  port: number,
): Promise<Array<{ status: number; retryAfter: string | undefined }>> {
  let answers: Array<{ status: number; retryAfter: string | undefined }> = [];
  for (let round = 0; round < 5; round++) {
    answers = await sendAtOnce(
      port,
      Array.from({ length: 16 }, () => payload(2_000)),
    );
    if (answers.some((answer) => answer.status === 503)) break;
  }
  return answers;
}

async function start(settings: Settings): Promise<number> {
  keyscope = await startConfigured(settings);
  return keyscope.running.addresses.otlpHttp!.port;
}

// Sixteen payloads of 2,000 spans at once: under the defaults (16 requests, 100,000 spans) all are taken.
describe('otlp.admission.*', () => {
  it('otlp.admission.maxInFlightRequests: requests past one in flight are refused with 503', async () => {
    const port = await start({ env: { KEYSCOPE_OTLP_ADMISSION_MAX_IN_FLIGHT_REQUESTS: '1' } });
    const answers = await untilRefused(port);
    expect(answers.some((answer) => answer.status === 200)).toBe(true);
    expect(answers.filter((answer) => answer.status === 503).length).toBeGreaterThan(0);
  });

  it('otlp.admission.maxInFlightSpans: payloads past 2,000 spans in flight are refused with 503', async () => {
    const port = await start({ file: { otlp: { admission: { maxInFlightSpans: 2_000 } } } });
    const answers = await untilRefused(port);
    expect(answers.some((answer) => answer.status === 200)).toBe(true);
    expect(answers.filter((answer) => answer.status === 503).length).toBeGreaterThan(0);
  });

  it('otlp.admission.retryAfterSeconds: a refused request is told to come back after that many seconds', async () => {
    const port = await start({
      env: {
        KEYSCOPE_OTLP_ADMISSION_MAX_IN_FLIGHT_REQUESTS: '1',
        KEYSCOPE_OTLP_ADMISSION_RETRY_AFTER_SECONDS: '17',
      },
    });
    const answers = await untilRefused(port);
    const refused = answers.filter((answer) => answer.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((answer) => answer.retryAfter === '17')).toBe(true);
  });
});
