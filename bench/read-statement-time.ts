/**
 * The server side of a read: the route's own query functions run once, each statement executed
 * for its rows (so what follows in the route gets real input) and then EXPLAIN ANALYZEd; the
 * planning and execution times summed. Beside the HTTP latency it says how much of a read is SQL.
 */
import type pg from 'pg';
import type { Queryable } from '../src/db/pool.js';

type Statement = string | { text: string; values?: unknown[] };

/** A Queryable that answers each statement as the pool does and adds its planning + execution time (EXPLAIN ANALYZE) to `into`. */
function timingByExplain(db: pg.Pool, into: number[]): Queryable {
  return {
    async query(statement: Statement, params?: unknown[]) {
      // Named (prepared) statements are run unnamed here: the EXPLAIN of a statement is another statement.
      const { text, values } = typeof statement === 'string' ? { text: statement, values: params } : statement;
      const result = await db.query(text, values);
      const { rows } = await db.query<{ 'QUERY PLAN': { 'Planning Time': number; 'Execution Time': number }[] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
        values,
      );
      const plan = rows[0]!['QUERY PLAN'][0]!;
      into.push(plan['Planning Time'] + plan['Execution Time']);
      return result;
    },
  } as unknown as Queryable;
}

/** Milliseconds of SQL (planning + execution, every statement) one run of `read` costs the server. */
export async function statementMs(db: pg.Pool, read: (q: Queryable) => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  await read(timingByExplain(db, times));
  return times.reduce((a, b) => a + b, 0);
}
