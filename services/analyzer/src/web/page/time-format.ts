/**
 * Times on the page are the browser's local time (on-call reads them against their own clock and
 * dashboards); the zone is named in the footer and every ISO original is in a `title`.
 */

const pad = (value: number, width = 2) => String(value).padStart(width, '0');

/** `09:39:01.282`, or `09:39:01` without milliseconds. */
export function formatClock(iso: string, withMillis = true): string {
  const date = new Date(iso);
  const clock = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return withMillis ? `${clock}.${pad(date.getMilliseconds(), 3)}` : clock;
}

/** `2026-11-29 09:39:01`. */
export function formatDateTime(iso: string): string {
  const date = new Date(iso);
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${formatClock(iso, false)}`;
}

/** `3 min ago`, `in 2 h` — coarse, for lists. */
export function formatAgo(iso: string, nowUnixMillis: number): string {
  const seconds = Math.round((nowUnixMillis - Date.parse(iso)) / 1000);
  const magnitude = Math.abs(seconds);
  const text =
    magnitude < 60
      ? `${magnitude} s`
      : magnitude < 3600
        ? `${Math.round(magnitude / 60)} min`
        : magnitude < 172_800
          ? `${Math.round(magnitude / 3600)} h`
          : `${Math.round(magnitude / 86_400)} d`;
  return seconds >= 0 ? `${text} ago` : `in ${text}`;
}

/** `1.35 ms`, `932 ms`, `2.11 s`, `7 s`, `3 min`. */
export function formatDuration(millis: number): string {
  if (millis < 10) return `${millis.toFixed(2)} ms`;
  if (millis < 1000) return `${Math.round(millis)} ms`;
  if (millis < 10_000) return `${(millis / 1000).toFixed(2)} s`;
  if (millis < 120_000) return `${Math.round(millis / 1000)} s`;
  return `${Math.round(millis / 60_000)} min`;
}

export function timeZoneName(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone ?? 'local time';
}
