import { context, defaultTextMapSetter, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { PaymentsNode } from './payments-service.ts';

export interface Send {
  readonly node: string;
  /** 0 when the client gave up waiting. */
  readonly statusCode: number;
  readonly replayed: boolean;
}

export interface CheckoutClient {
  readonly provider: BasicTracerProvider;
  /**
   * Sends one logical payment, attempt `i` to `route[i]` (the failover the load balancer would
   * do), with the same key every time; stops at the first answer that is not a timeout, a 409 or a
   * 5xx (what a proxy re-sending non-idempotent requests on errors does).
   */
  pay(key: string, body: object, route: readonly PaymentsNode[]): Promise<Send[]>;
  /** Waits for requests the client abandoned but the servers are still executing. */
  settled(): Promise<void>;
}

const propagator = new W3CTraceContextPropagator();

/** The checkout service's payments client: a timeout, retries with `http.request.resend_count`. */
export function createCheckoutClient(options: {
  readonly spanProcessor: SpanProcessor;
  readonly timeoutMillis: number;
  /** Waited before a retry that follows a 409. */
  readonly backoffMillis: number;
}): CheckoutClient {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'checkout', 'service.instance.id': 'checkout-1' }),
    spanProcessors: [options.spanProcessor],
  });
  const tracer = provider.getTracer('checkout');
  const abandoned: Promise<unknown>[] = [];

  async function send(key: string, body: object, node: PaymentsNode, resendCount: number): Promise<Send> {
    const span = tracer.startSpan('POST', {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'server.address': node.name,
        'server.port': 443,
        'http.request.resend_count': resendCount,
        'idempotency.key': key,
      },
    });
    const headers: Record<string, string> = { 'idempotency-key': key };
    propagator.inject(trace.setSpan(context.active(), span), headers, defaultTextMapSetter);
    const response = node.app.inject({ method: 'POST', url: '/payments', payload: body, headers });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), options.timeoutMillis);
    });
    const answer = await Promise.race([response, timedOut]);
    clearTimeout(timer);
    if (answer === 'timeout') {
      abandoned.push(response);
      span.setAttribute('error.type', 'timeout');
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'timeout' });
      span.end();
      return { node: node.name, statusCode: 0, replayed: false };
    }
    span.setAttribute('http.response.status_code', answer.statusCode);
    span.end();
    return {
      node: node.name,
      statusCode: answer.statusCode,
      replayed: answer.headers['idempotent-replayed'] === 'true',
    };
  }

  return {
    provider,
    async pay(key, body, route) {
      const sends: Send[] = [];
      for (const [resendCount, node] of route.entries()) {
        const result = await send(key, body, node, resendCount);
        sends.push(result);
        if (result.statusCode === 409)
          await new Promise((resolve) => setTimeout(resolve, options.backoffMillis));
        else if (result.statusCode !== 0 && result.statusCode < 500) break;
      }
      return sends;
    },
    async settled() {
      await Promise.all(abandoned.splice(0));
    },
  };
}
