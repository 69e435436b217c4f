import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type Context,
  type ContextManager,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type Tracer,
} from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

export interface TestTracing {
  readonly tracer: Tracer;
  /** A SERVER span, as an HTTP instrumentation would open for a request. */
  serverSpan(name?: string): Span;
  finished(): ReadableSpan[];
  /** The idempotency decision recorded on each finished span, in end order. */
  decisions(): Record<string, unknown>[];
}

export function createTestTracing(
  resource: Record<string, string> = { 'service.name': 'payments' },
): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(resource),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('gate-test');
  return {
    tracer,
    serverSpan: (name = 'POST /payments') => tracer.startSpan(name, { kind: SpanKind.SERVER }),
    finished: () => exporter.getFinishedSpans(),
    decisions: () =>
      exporter.getFinishedSpans().map((span) => {
        const picked: Record<string, unknown> = {};
        for (const [name, value] of Object.entries(span.attributes)) {
          if (name.startsWith('idempotency.') || name === 'tenant.id') picked[name] = value;
        }
        return picked;
      }),
  };
}

/**
 * The smallest context manager that makes `trace.getActiveSpan()` follow async work, standing in
 * for the SDK's AsyncLocalStorage one (not a dependency of this package).
 */
export class AsyncLocalContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(context, () => fn.call(thisArg, ...args));
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = this.with.bind(this);
    return ((...args: unknown[]) =>
      run(context, target as (...a: unknown[]) => unknown, undefined, ...args)) as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.#storage.disable();
    return this;
  }
}
