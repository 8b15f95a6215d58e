/** Migrations: applied at start by every API and worker process, so they must be safe twice and at once. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { presentStreamItem, streamPageBytes } from '../../src/api/presenters.js';
import { EVENT_TYPES, getEventDefinition, streamData } from '../../src/core/catalog/index.js';
import { fromTable, readStream, type EventRow, type TableRow } from '../../src/db/events.js';
import { migrate } from '../../src/db/migrate.js';
import type { Queryable } from '../../src/db/pool.js';
import { eventBody } from '../../src/delivery/send-webhook.js';
import { projectRoot } from '../../dev/tools.js';
import { samples } from '../support/catalog-samples.js';
import { scratchDatabaseBefore } from '../support/scratch-database.js';

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
    const scratch = await scratchDatabaseBefore(inject('databaseUrl'), '0008_');
    const db = scratch.db;
    try {
      const { rows } = await db.query(`INSERT INTO accounts (name, owner_email) VALUES ('a', 'o@example.com') RETURNING id`);
      await db.query(
        `INSERT INTO events (account_id, environment, cursor, type, idempotency_key, contact_ref, data, stream_data, occurred_at)
         VALUES ($1, 'live', 1, 't', 'k1', 'contact-1', '{}', '{}', now()), ($1, 'live', 2, 't', 'k2', NULL, '{}', '{}', now())`,
        [rows[0].id],
      );
      await scratch.migrateRest();
      const after = await db.query(`SELECT idempotency_key, contact_refs FROM events ORDER BY cursor`);
      expect(after.rows).toEqual([
        { idempotency_key: 'k1', contact_refs: ['contact-1'] },
        { idempotency_key: 'k2', contact_refs: [] },
      ]);
    } finally {
      await scratch.drop();
    }
  });

  it('0031 keeps one copy of each existing payload: stream items and webhook bodies of every catalog type read as before', async () => {
    const scratch = await scratchDatabaseBefore(inject('databaseUrl'), '0031_');
    const db = scratch.db;
    try {
      const { rows: accounts } = await db.query(`INSERT INTO accounts (name, owner_email) VALUES ('a', 'o@example.com') RETURNING id`);
      // Every type as the service stored it before: the payload, and the stream item's data beside it.
      for (const [i, def] of EVENT_TYPES.entries()) {
        const data = def.data.parse(samples[def.type]!.data);
        const ids = { messageResourceId: crypto.randomUUID(), contactId: crypto.randomUUID(), conversationId: crypto.randomUUID() };
        await db.query(
          `INSERT INTO events (account_id, environment, cursor, type, idempotency_key, message_resource_id, data, stream_data, occurred_at)
           VALUES ($1, 'live', $2, $3, $4, $5, $6, $7, now())`,
          [
            accounts[0].id,
            i + 1,
            def.type,
            `k${i}`,
            ids.messageResourceId,
            JSON.stringify(data),
            JSON.stringify(streamData(def, data, ids)),
          ],
        );
      }
      const seen = (row: EventRow) => ({
        item: JSON.stringify(presentStreamItem(row)),
        body: eventBody(getEventDefinition(row.type)!, row).toString('utf8'),
      });
      const old = (await db.query<EventRow>(`SELECT * FROM events ORDER BY cursor`)).rows.map(seen);
      await scratch.migrateRest();
      const now = (await db.query<TableRow>(`SELECT * FROM events ORDER BY cursor`)).rows.map((r) => seen(fromTable(r)));
      expect(now).toEqual(old);
      // A stream page writes each item's JSON itself: the same text (the payloads 0031 copied are jsonb's text, parsed again).
      const page = await readStream(db as unknown as Queryable, accounts[0].id, 'live', '0', 100);
      const paging = { cursor: String(old.length), next: null, has_more: false };
      expect(streamPageBytes(page.rows, paging).toString('utf8')).toBe(
        `{"data":[${old.map((o) => o.item).join(',')}],"paging":${JSON.stringify(paging)}}`,
      );
      // Only received messages keep their copy: their platform ids were never columns.
      const { rows: kept } = await db.query(`SELECT type FROM events WHERE stream_data IS NOT NULL ORDER BY type`);
      expect(kept.map((r) => r.type)).toEqual(
        EVENT_TYPES.map((d) => d.type)
          .filter((t) => t.endsWith('.message.received'))
          .sort(),
      );
    } finally {
      await scratch.drop();
    }
  });
});
