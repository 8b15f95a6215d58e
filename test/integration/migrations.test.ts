/** Migrations: applied at start by every API and worker process, so they must be safe twice and at once. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { projectRoot } from '../../dev/tools.js';

/**
 * node-pg-migrate ends its connections without waiting for them to close; a forced drop that
 * kills one still closing makes it emit an 'error' nobody listens to. Wait for them to go first.
 */
async function dropWhenIdle(admin: pg.Client, name: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [name]);
    if (rows[0].n === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await admin.query(`DROP DATABASE "${name}" WITH (FORCE)`);
}

describe('migrations', () => {
  it('apply from two processes at once and again afterwards, once each', async () => {
    const serverUrl = new URL(inject('databaseUrl'));
    const name = `migrate_${crypto.randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: serverUrl.toString() });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    try {
      const url = new URL(serverUrl);
      url.pathname = `/${name}`;
      await Promise.all([migrate(url.toString()), migrate(url.toString()), migrate(url.toString())]);
      await migrate(url.toString());
      const db = new pg.Client({ connectionString: url.toString() });
      await db.connect();
      const { rows } = await db.query(`SELECT name FROM schema_migrations ORDER BY id`);
      await db.end();
      const files = fs
        .readdirSync(path.join(projectRoot, 'src', 'db', 'migrations'))
        .map((f) => f.replace(/\.sql$/, ''))
        .sort();
      expect(files.length).toBeGreaterThan(1);
      expect(rows.map((r) => r.name)).toEqual(files);
    } finally {
      await dropWhenIdle(admin, name);
      await admin.end();
    }
  });

  it('0008 gives every existing event its contact_ref as contact_refs', async () => {
    const serverUrl = new URL(inject('databaseUrl'));
    const name = `migrate_${crypto.randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: serverUrl.toString() });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const db = new pg.Client({ connectionString: url.toString() });
    try {
      const dir = path.join(projectRoot, 'src', 'db', 'migrations');
      await runner({ databaseUrl: url.toString(), dir, direction: 'up', count: 7, migrationsTable: 'schema_migrations', log: () => {} });
      await db.connect();
      const { rows } = await db.query(`INSERT INTO accounts (name, owner_email) VALUES ('a', 'o@example.com') RETURNING id`);
      await db.query(
        `INSERT INTO events (account_id, environment, cursor, type, idempotency_key, contact_ref, data, stream_data, occurred_at)
         VALUES ($1, 'live', 1, 't', 'k1', 'contact-1', '{}', '{}', now()), ($1, 'live', 2, 't', 'k2', NULL, '{}', '{}', now())`,
        [rows[0].id],
      );
      await migrate(url.toString());
      const after = await db.query(`SELECT idempotency_key, contact_refs FROM events ORDER BY cursor`);
      expect(after.rows).toEqual([
        { idempotency_key: 'k1', contact_refs: ['contact-1'] },
        { idempotency_key: 'k2', contact_refs: [] },
      ]);
    } finally {
      await db.end();
      await dropWhenIdle(admin, name);
      await admin.end();
    }
  });
});
