/** Migrations: applied at start by every API and worker process, so they must be safe twice and at once. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { migrate } from '../../db/migrate.js';
import { projectRoot } from '../../dev/tools.js';

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
        .readdirSync(path.join(projectRoot, 'db', 'migrations'))
        .map((f) => f.replace(/\.sql$/, ''))
        .sort();
      expect(files.length).toBeGreaterThan(1);
      expect(rows.map((r) => r.name)).toEqual(files);
    } finally {
      await admin.query(`DROP DATABASE "${name}" WITH (FORCE)`);
      await admin.end();
    }
  });
});
