/** Query rules of the stream (SPEC 4.8, 6.5): `after` strict, `limit` forgiving. */
import { DEFAULT_LIMIT, MAX_LIMIT } from './paging.js';

/** `after` as a bigint-safe decimal string, or undefined when it is not a non-negative integer. */
export function parseStreamAfter(raw: unknown): string | undefined {
  if (raw === undefined) return '0';
  if (typeof raw !== 'string' || !/^\d{1,18}$/.test(raw)) return undefined;
  return BigInt(raw).toString();
}

/** Same rule as the lists: invalid back to 20, above 100 cut to 100. */
export function parseStreamLimit(raw: unknown): number {
  if (typeof raw !== 'string' || !/^\d+$/.test(raw) || Number(raw) < 1) return DEFAULT_LIMIT;
  return Math.min(Number(raw), MAX_LIMIT);
}

export function streamPaging(
  after: string,
  cursors: string[],
  hasMore: boolean,
): { cursor: string; next: string | null; has_more: boolean } {
  const cursor = cursors.length ? cursors[cursors.length - 1]! : after;
  return { cursor, next: hasMore ? cursor : null, has_more: hasMore };
}
