/** Provider times are unix seconds, usually as strings. ISO 8601 (UTC) or null when unreadable. */
export function unixSecondsToIso(value: unknown): string | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n <= 0) return null;
  const d = new Date(n * 1000);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}
