/**
 * Polls `read()` every `intervalMillis` until what it returns equals `expected` (as JSON) or
 * `timeoutMillis` pass, and returns the last value read, for the test to compare exactly: the
 * scaled mode converges (Kafka, the detectors' ticks, materialization), it does not answer at once.
 */
export async function whenEqual<T>(
  read: () => Promise<T>,
  expected: T,
  timeoutMillis: number,
  intervalMillis: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMillis;
  let last = await read();
  while (Date.now() < deadline && JSON.stringify(last) !== JSON.stringify(expected)) {
    await new Promise((resolve) => setTimeout(resolve, intervalMillis));
    last = await read();
  }
  return last;
}
