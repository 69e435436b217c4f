export { ACCEPTED_ALL, type ConsumeResult, type SpanConsumer } from './consumer.ts';
export {
  type Attributes,
  type AttributeValue,
  type InstrumentationScope,
  type Resource,
  type Span,
  type SpanEvent,
  SpanKind,
  type SpanStatus,
  StatusCode,
} from './span.ts';
