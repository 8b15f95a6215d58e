/**
 * The server side of a read: the route's own query functions run once, each statement executed
 * for its rows (so what follows in the route gets real input) and then EXPLAIN ANALYZEd; the
 * planning and execution times summed. Beside the HTTP latency it says how much of a read is SQL.
 */
import type pg from 'pg';
import { withClient, type Queryable } from '../src/db/pool.js';

type Statement = string | { text: string; values?: unknown[] };

/** Settings a read makes for its statements (withoutSorts, src/db/deliveries.ts): run as they are, there is no plan to time. */
const SETTING = /^\s*(SET|RESET)\b/i;

/** A Queryable that answers each statement as `client` does and adds its planning + execution time (EXPLAIN ANALYZE) to `into`. */
function timingByExplain(client: pg.PoolClient, into: number[]): Queryable {
  return {
    async query(statement: Statement, params?: unknown[]) {
      // Named (prepared) statements are run unnamed here: the EXPLAIN of a statement is another statement.
      const { text, values } = typeof statement === 'string' ? { text: statement, values: params } : statement;
      const result = await client.query(text, values);
      if (SETTING.test(text)) return result;
      const { rows } = await client.query<{ 'QUERY PLAN': { 'Planning Time': number; 'Execution Time': number }[] }>(
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
  // One connection, as the route's pool checkout: a setting the read makes holds for its statements.
  await withClient(db, (client) => read(timingByExplain(client, times)));
  return times.reduce((a, b) => a + b, 0);
}
