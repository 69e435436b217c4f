/**
 * Service time as measured on real payment APIs: lognormal, median 300 ms, σ ≈ 0.77 (so about
 * 1 request in 140 takes longer than 2 s), capped so a lab run stays bounded.
 */
export function serviceLatencyMillis(random: () => number = Math.random): number {
  const MEDIAN_MILLIS = 300;
  const SIGMA = 0.77;
  const CAP_MILLIS = 10_000;
  // Box–Muller: one standard normal from two uniforms.
  const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Math.min(CAP_MILLIS, MEDIAN_MILLIS * Math.exp(SIGMA * normal));
}

export function sleep(millis: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, millis));
}
