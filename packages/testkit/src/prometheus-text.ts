/** The sum of `name`'s samples whose labels include `labels`, in Prometheus text format (0 when none). */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const series = match[2] ?? '';
    if (Object.entries(labels).every(([label, value]) => series.includes(`${label}="${value}"`))) {
      sum += Number(match[3]);
    }
  }
  return sum;
}
