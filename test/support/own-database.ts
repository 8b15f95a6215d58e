/**
 * A migrated database of a test file's own on the run's Postgres server: for a test whose
 * subject looks at every row of its database (a sweep), which would otherwise take or see the
 * rows of the files running beside it on the shared one.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Db } from '../../src/db/pool.js';

export interface OwnDatabase {
  url: string;
  db: Db;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

async function onServer<T>(body: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: inject('databaseUrl') });
  await admin.connect();
  try {
    return await body(admin);
  } finally {
    await admin.end();
  }
}

export async function ownDatabase(prefix: string, poolSize = 4): Promise<OwnDatabase> {
  const name = `${prefix}_${crypto.randomBytes(4).toString('hex')}`;
  await onServer((admin) => admin.query(`CREATE DATABASE "${name}"`));
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  await migrate(url.toString());
  const db = createPool(url.toString(), poolSize);
  return {
    url: url.toString(),
    db,
    async drop() {
      await db.end();
      await onServer((admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}
