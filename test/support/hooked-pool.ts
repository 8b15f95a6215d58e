/** A pool with a hook before each statement: to count statements, hold one back, or fail one as a lost connection would. */
import type { Db } from '../../src/db/pool.js';
import { testDb } from './harness.js';

/**
 * `db` (the tests' pool when unset), `before` awaited ahead of each of its statements (given its
 * text and its name, if any); a throw fails that statement.
 */
export const beforeEachQuery = (before: (text: string, name: string | undefined) => Promise<unknown>, db: Db = testDb()): Db =>
  new Proxy(db, {
    get(pool, key) {
      if (key !== 'query') return Reflect.get(pool, key);
      return async (q: string | { text: string; name?: string }, values?: unknown[]) => {
        await (typeof q === 'string' ? before(q, undefined) : before(q.text, q.name));
        return pool.query(q as string, values);
      };
    },
  });
