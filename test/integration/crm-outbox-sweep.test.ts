/**
 * The worker's sweep stores CRM events a dead API process committed but never stored. On a
 * database of its own: the sweep takes every waiting event of its database, and on the shared
 * one it would store (and so hide) the events other files leave waiting on purpose.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyContactEdit } from '../../src/crm/contact-stage.js';
import { inTransaction } from '../../src/db/pool.js';
import { runCrmOutboxSweep } from '../../src/crm/outbox-sweep.js';
import { contactOn, crmOrigin, eventsOf } from '../support/crm-fixtures.js';
import { eventually, startTestApi, type TestApi } from '../support/harness.js';
import { ownDatabase, type OwnDatabase } from '../support/own-database.js';

let own: OwnDatabase;
let api: TestApi;
beforeAll(async () => {
  own = await ownDatabase('crm_sweep');
  api = await startTestApi({ db: own.db });
});
afterAll(async () => {
  await api?.close();
  await own?.drop();
});

it('stores a waiting stage change once, and stops on abort', async () => {
  const db = own.db;
  const o = await crmOrigin(db);
  await api.request('POST', '/api/v1/stages', { key: o.tenant.key, body: { key: 'lead', label: 'Lead' } });
  const a = await contactOn(o, o.chatapp.id, {}, db);
  await inTransaction(db, (tx) =>
    applyContactEdit(tx, { accountId: o.tenant.accountId, environment: 'live' }, { contactId: a.id, stageKey: 'lead', changedBy: 'auto' }),
  );
  expect(await eventsOf(o.tenant.accountId, 'live', db)).toEqual([]);
  const stop = new AbortController();
  const sweep = runCrmOutboxSweep(api.deps, { intervalMs: 50, olderThanMs: 0, signal: stop.signal });
  const [event] = await eventually(async () => {
    const events = await eventsOf(o.tenant.accountId, 'live', db);
    return events.length > 0 ? events : undefined;
  });
  expect(event!.data).toMatchObject({ contact: { id: a.id }, new_stage: { key: 'lead' }, changed_by: 'auto' });
  // Stored once: its outbox row goes after the store, so the sweeps after it find nothing to store again.
  await eventually(async () => {
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM crm_outbox WHERE account_id = $1`, [o.tenant.accountId]);
    return rows[0].n === 0;
  });
  expect(await eventsOf(o.tenant.accountId, 'live', db)).toHaveLength(1);
  stop.abort();
  await sweep;
});
