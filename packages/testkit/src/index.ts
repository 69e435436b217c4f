export {
  activity,
  arrival,
  client,
  effect,
  type PlacementInput,
  placement,
  server,
  TEST_EPOCH_UNIX_MILLIS,
} from './attempt-builders.ts';
