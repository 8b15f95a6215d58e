/**
 * Keyset paging of the audit lists (SPEC 4.7). A cursor is an opaque token naming the
 * (created_at, id) of an edge row; pages never skip or repeat rows under concurrent writes.
 */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** created_at as Postgres prints timestamptz: `2026-11-22 10:00:00.123456+00`. */
const PG_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?(?:([+-])(\d{2})(?::(\d{2}))?|Z)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True when `ts` has the printed shape and names a real instant: the date and time fields
 * round-trip through a UTC date (no month 13, no 30 February, no hour 24) and the offset is
 * one Postgres accepts. A forged cursor must be refused here, not by a failing query.
 */
function isRealTimestamp(ts: string): boolean {
  const m = PG_TIMESTAMP.exec(ts);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (year < 1) return false;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day); // setUTCFullYear, unlike Date.UTC, keeps years below 100 as given
  d.setUTCHours(hour, minute, second);
  const roundTrips =
    d.getUTCFullYear() === year &&
    d.getUTCMonth() === month - 1 &&
    d.getUTCDate() === day &&
    d.getUTCHours() === hour &&
    d.getUTCMinutes() === minute &&
    d.getUTCSeconds() === second;
  const offsetHours = m[9] === undefined ? 0 : Number(m[9]);
  const offsetMinutes = m[10] === undefined ? 0 : Number(m[10]);
  return roundTrips && offsetHours <= 15 && offsetMinutes <= 59;
}

export interface PageKey {
  /** created_at exactly as Postgres printed it (microseconds kept). */
  ts: string;
  id: string;
}

/** `limit` above the maximum is cut to it; a missing or invalid value falls back to the default. */
export function parseLimit(raw: unknown): number {
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) return DEFAULT_LIMIT;
  const n = Number(raw);
  if (n < 1) return DEFAULT_LIMIT;
  return Math.min(n, MAX_LIMIT);
}

export function encodePageKey(key: PageKey): string {
  return Buffer.from(JSON.stringify([key.ts, key.id]), 'utf8').toString('base64url');
}

/** The key inside a cursor, or undefined when the token is not one of ours (or names no real row position). */
export function decodePageKey(token: string): PageKey | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 2) return undefined;
    const [ts, id] = parsed;
    if (typeof ts !== 'string' || typeof id !== 'string') return undefined;
    if (!UUID.test(id) || !isRealTimestamp(ts)) return undefined;
    return { ts, id };
  } catch {
    return undefined;
  }
}

export interface Paging {
  cursors: { before: string | null; after: string | null };
  next: string | null;
  previous: string | null;
}

/**
 * Builds the paging block from rows fetched with one extra row as a look-ahead.
 * `direction` says which way the query walked: 'after' (forward) or 'before' (backward, rows already in display order).
 */
export function pageOf<T extends { page_key: PageKey }>(
  rows: T[],
  limit: number,
  direction: 'after' | 'before',
  hadCursor: boolean,
): { items: T[]; paging: Paging } {
  const hasMore = rows.length > limit;
  const items = direction === 'after' ? rows.slice(0, limit) : rows.slice(Math.max(0, rows.length - limit));
  const first = items[0];
  const last = items[items.length - 1];
  const before = first ? encodePageKey(first.page_key) : null;
  const after = last ? encodePageKey(last.page_key) : null;
  const moreForward = direction === 'after' ? hasMore : hadCursor;
  const moreBackward = direction === 'after' ? hadCursor : hasMore;
  return {
    items,
    paging: {
      cursors: { before, after },
      next: moreForward ? after : null,
      previous: moreBackward && items.length ? before : null,
    },
  };
}
