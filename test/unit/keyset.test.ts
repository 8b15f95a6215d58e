/** The keyset of paged lists: which side of the cursor, read in which direction, turned round or not. */
import { describe, expect, it } from 'vitest';
import { inPageOrder, keyset } from '../../src/db/keyset.js';

const edge = { ts: '2026-11-23 10:00:00+00', id: '00000000-0000-4000-8000-000000000001' };

describe('keyset', () => {
  it.each([
    ['oldest-first', {}, null, 'ASC', false],
    ['oldest-first', { after: edge }, '(created_at, id) > ($3::timestamptz, $4::uuid)', 'ASC', false],
    ['oldest-first', { before: edge }, '(created_at, id) < ($3::timestamptz, $4::uuid)', 'DESC', true],
    ['newest-first', {}, null, 'DESC', false],
    ['newest-first', { after: edge }, '(created_at, id) < ($3::timestamptz, $4::uuid)', 'DESC', false],
    ['newest-first', { before: edge }, '(created_at, id) > ($3::timestamptz, $4::uuid)', 'ASC', true],
  ] as const)('%s %j: %s, read %s', (listing, cursor, clause, order, flipped) => {
    const params: unknown[] = ['account', 21];
    expect(keyset({ limit: 20, ...cursor }, params, '', listing)).toEqual({ clause, order, flipped });
    expect(params).toEqual(clause ? ['account', 21, edge.ts, edge.id] : ['account', 21]);
  });

  it('qualifies the columns of a join, and turns a page read backwards round', () => {
    expect(keyset({ limit: 5, after: edge }, [], 'c.').clause).toBe('(c.created_at, c.id) > ($1::timestamptz, $2::uuid)');
    expect(inPageOrder([3, 2, 1], { clause: 'x', order: 'DESC', flipped: true })).toEqual([1, 2, 3]);
    expect(inPageOrder([1, 2, 3], { clause: null, order: 'ASC', flipped: false })).toEqual([1, 2, 3]);
  });
});
