/**
 * Waits until `read()` reaches `target` or `timeoutMillis` pass, and returns its value then, for
 * the test to compare exactly (a count past the target is a failure too, not a reason to wait).
 */
export async function counterReaches(
  read: () => number,
  target: number,
  timeoutMillis = 60_000,
): Promise<number> {
  const deadline = Date.now() + timeoutMillis;
  while (read() < target && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  return read();
}
