import { describe, expect, it } from 'vitest';
import { decodePageKey, encodePageKey, pageOf, parseLimit } from '../../src/core/paging.js';

const key = (n: number) => ({
  ts: `2026-11-22 10:00:00.${String(n).padStart(6, '0')}+00`,
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
});
const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ page_key: key(i + 1) }));

describe('paging', () => {
  it('parses limit: default 20, capped at 100, invalid back to default', () => {
    expect(parseLimit(undefined)).toBe(20);
    expect(parseLimit('5')).toBe(5);
    expect(parseLimit('100')).toBe(100);
    expect(parseLimit('101')).toBe(100);
    expect(parseLimit('0')).toBe(20);
    expect(parseLimit('-3')).toBe(20);
    expect(parseLimit('abc')).toBe(20);
    expect(parseLimit('2.5')).toBe(20);
  });

  it('round-trips cursors and rejects foreign tokens', () => {
    const k = key(7);
    expect(decodePageKey(encodePageKey(k))).toEqual(k);
    expect(decodePageKey('not-a-cursor')).toBeUndefined();
    expect(decodePageKey(Buffer.from('["x","y"]').toString('base64url'))).toBeUndefined();
    expect(decodePageKey(Buffer.from(JSON.stringify(['2026-01-01', '1; DROP TABLE x'])).toString('base64url'))).toBeUndefined();
  });

  const token = (ts: unknown, id: unknown = '00000000-0000-4000-8000-000000000001') =>
    Buffer.from(JSON.stringify([ts, id])).toString('base64url');

  it.each([
    '2026-11-22 10:00:00+00',
    '2026-11-22 10:00:00.123456+00',
    '2026-11-22T10:00:00.5Z',
    '2026-11-22 10:00:00-03',
    '2026-11-22 10:00:00+05:30',
    '2024-02-29 23:59:59.999999+00',
    '0001-01-01 00:00:00+00',
    '2026-11-22 10:00:00',
  ])('accepts a real timestamp %s', (ts) => {
    expect(decodePageKey(token(ts))).toEqual({ ts, id: '00000000-0000-4000-8000-000000000001' });
  });

  it.each([
    '2026-13-01 10:00:00+00',
    '2026-00-10 10:00:00+00',
    '2026-02-30 10:00:00+00',
    '2025-02-29 10:00:00+00',
    '2026-04-31 10:00:00+00',
    '2026-11-00 10:00:00+00',
    '2026-11-22 24:00:00+00',
    '2026-11-22 10:60:00+00',
    '2026-11-22 10:00:60+00',
    '2026-11-22 10:00:00+99',
    '2026-11-22 10:00:00+16',
    '2026-11-22 10:00:00+05:60',
    '0000-01-01 00:00:00+00',
    '2026-11-22 10:00:00.1234567+00',
    '2026-11-22',
  ])('refuses an impossible or malformed timestamp %s', (ts) => {
    expect(decodePageKey(token(ts))).toBeUndefined();
  });

  it('refuses an id that is not a UUID and a key of the wrong shape', () => {
    expect(decodePageKey(token('2026-11-22 10:00:00+00', '00000000-0000-4000-8000-00000000000g'))).toBeUndefined();
    expect(decodePageKey(token('2026-11-22 10:00:00+00', 42))).toBeUndefined();
    expect(decodePageKey(Buffer.from(JSON.stringify({ ts: '2026-11-22 10:00:00+00' })).toString('base64url'))).toBeUndefined();
  });

  it('sets next only when a look-ahead row exists', () => {
    const full = pageOf(rows(3), 2, 'after', false);
    expect(full.items).toHaveLength(2);
    expect(full.paging.next).toBe(encodePageKey(key(2)));
    expect(full.paging.previous).toBeNull();
    const last = pageOf(rows(2), 2, 'after', true);
    expect(last.paging.next).toBeNull();
    expect(last.paging.previous).toBe(encodePageKey(key(1)));
  });

  it('walking backwards drops the extra row at the far end', () => {
    const back = pageOf(rows(3), 2, 'before', true);
    expect(back.items.map((r) => r.page_key)).toEqual([key(2), key(3)]);
    expect(back.paging.previous).toBe(encodePageKey(key(2)));
    expect(back.paging.next).toBe(encodePageKey(key(3)));
  });

  it('an empty page has no cursors', () => {
    expect(pageOf([], 20, 'after', false).paging).toEqual({ cursors: { before: null, after: null }, next: null, previous: null });
  });
});
