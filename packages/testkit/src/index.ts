export {
  activity,
  arrival,
  client,
  type PlacementInput,
  placement,
  server,
  TEST_EPOCH_UNIX_MILLIS,
} from './attempt-builders.ts';
