export {
  declaredErrors,
  defineError,
  type ErrorDefinition,
  isKeyscopeError,
  KeyscopeError,
} from './keyscope-error.ts';
export { GrpcCode, grpcCodeFor, type KafkaAction, kafkaActionFor } from './transport.ts';
