/** The keyset part of a paged list query (SPEC 4.7 paging), shared by every list ordered by (created_at, id). */
import type { PageKey } from '../core/paging.js';

/**
 * The select-list column each row of a paged list carries its cursor in (`page_key`, or `as`): its
 * created_at to the microsecond, as text, and its id, of the row `alias` when the list joins others.
 */
export function pageKeyColumn(alias?: string, as = 'page_key'): string {
  const of = alias ? `${alias}.` : '';
  return `json_build_object('ts', ${of}created_at::text, 'id', ${of}id) AS ${as}`;
}

export interface Page {
  limit: number;
  after?: PageKey;
  before?: PageKey;
}

/** Endpoints, stages, templates... read oldest first; the audit list, contacts, consents and messages newest first. */
export type Listing = 'oldest-first' | 'newest-first';

export interface Keyset {
  /** The WHERE condition on the cursor, or null on a first page. */
  clause: string | null;
  /** The ORDER BY direction to read in: towards the cursor's side of the page. */
  order: 'ASC' | 'DESC';
  /** A `before` page is read backwards from its cursor: `inPageOrder` turns it round. */
  flipped: boolean;
}

/**
 * Pushes the cursor's values onto `params` and returns the WHERE clause (or null) with the
 * ORDER BY direction; `prefix` qualifies the columns when the query joins.
 */
export function keyset(page: Page, params: unknown[], prefix = '', listing: Listing = 'oldest-first'): Keyset {
  const forward = listing === 'oldest-first' ? 'ASC' : 'DESC';
  const backward = forward === 'ASC' ? 'DESC' : 'ASC';
  const edge = page.after ?? page.before;
  if (!edge) return { clause: null, order: forward, flipped: false };
  params.push(edge.ts, edge.id);
  const order = page.after ? forward : backward;
  const op = order === 'ASC' ? '>' : '<';
  return {
    clause: `(${prefix}created_at, ${prefix}id) ${op} ($${params.length - 1}::timestamptz, $${params.length}::uuid)`,
    order,
    flipped: !page.after,
  };
}

/** The rows of a page in the list's own order. */
export function inPageOrder<T>(rows: T[], k: Keyset): T[] {
  return k.flipped ? rows.reverse() : rows;
}
