/** The keyset part of a paged list query (SPEC 4.7 paging), shared by the lists ordered by (created_at, id). */
import type { PageKey } from '../core/paging.js';

export interface Page {
  limit: number;
  after?: PageKey;
  before?: PageKey;
}

/**
 * Pushes the cursor's values onto `params` and returns the WHERE clause (or null) with the
 * ORDER BY direction; `prefix` qualifies the columns when the query joins. Rows read with
 * 'DESC' are reversed by `inPageOrder` before display.
 */
export function keyset(page: Page, params: unknown[], prefix = ''): { clause: string | null; order: 'ASC' | 'DESC' } {
  const edge = page.after ?? page.before;
  if (!edge) return { clause: null, order: 'ASC' };
  params.push(edge.ts, edge.id);
  const op = page.after ? '>' : '<';
  return {
    clause: `(${prefix}created_at, ${prefix}id) ${op} ($${params.length - 1}::timestamptz, $${params.length}::uuid)`,
    order: page.after ? 'ASC' : 'DESC',
  };
}

export function inPageOrder<T>(rows: T[], order: 'ASC' | 'DESC'): T[] {
  return order === 'DESC' ? rows.reverse() : rows;
}
