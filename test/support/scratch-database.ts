/**
 * A database of its own on the test server, migrated up to just before one migration: for tests
 * of that migration on rows stored in the schema before it.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { projectRoot } from '../../dev/tools.js';
import { migrate } from '../../src/db/migrate.js';

const migrationsDir = path.join(projectRoot, 'src', 'db', 'migrations');

export interface ScratchDatabase {
  url: string;
  /** A connected client on it (ended by `drop`). */
  db: pg.Client;
  /** Applies the migrations left, as every process does at start. */
  migrateRest(): Promise<void>;
  drop(): Promise<void>;
}

/** `serverUrl`: the test server; `prefix`: the first migration not applied (`'0029_'`). */
export async function scratchDatabaseBefore(serverUrl: string, prefix: string): Promise<ScratchDatabase> {
  const count = fs
    .readdirSync(migrationsDir)
    .sort()
    .findIndex((f) => f.startsWith(prefix));
  if (count < 0) throw new Error(`no migration ${prefix}`);
  const name = `scratch_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  await runner({
    databaseUrl: url.toString(),
    dir: migrationsDir,
    direction: 'up',
    count,
    migrationsTable: 'schema_migrations',
    log: () => {},
  });
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  return {
    url: url.toString(),
    db,
    migrateRest: () => migrate(url.toString()),
    async drop() {
      await db.end();
      // node-pg-migrate ends its connections without waiting for them to close; a forced drop that
      // kills one still closing makes it emit an 'error' nobody listens to. Wait for them to go first.
      for (let i = 0; i < 50; i++) {
        const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [name]);
        if (rows[0].n === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await admin.query(`DROP DATABASE "${name}" WITH (FORCE)`);
      await admin.end();
    },
  };
}
