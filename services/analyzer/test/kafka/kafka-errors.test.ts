import { describe, expect, it } from 'vitest';
import { KAFKA_ERRORS } from '../../src/kafka/kafka-errors.ts';

describe('Kafka error codes', () => {
  it('declares only KS_KAFKA_ codes', () => {
    for (const definition of KAFKA_ERRORS) expect(definition.code).toMatch(/^KS_KAFKA_[A-Z_]+$/);
  });
});
