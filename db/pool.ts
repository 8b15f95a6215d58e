import pg from 'pg';

// Timestamps come back as Date, bigints (stream cursors) as strings: the API renders cursors as strings anyway.
export type Db = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

export function createPool(url: string, max = 10): Db {
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return pool;
}

/** Runs `fn` in a transaction, rolling back on any error. */
export async function inTransaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
