/** The worker's sweep stores CRM events a dead API process committed but never stored. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyContactEdit } from '../../src/crm/contact-stage.js';
import { inTransaction } from '../../src/db/pool.js';
import { runCrmOutboxSweep } from '../../src/crm/outbox-sweep.js';
import { contactOn, crmOrigin, eventsOf } from '../support/crm-fixtures.js';
import { eventually, startTestApi, testDb, type TestApi } from '../support/harness.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

it('stores a waiting stage change once, and stops on abort', async () => {
  const o = await crmOrigin();
  await api.request('POST', '/api/v1/stages', { key: o.tenant.key, body: { key: 'lead', label: 'Lead' } });
  const a = await contactOn(o, o.chatapp.id);
  await inTransaction(testDb(), (tx) =>
    applyContactEdit(tx, { accountId: o.tenant.accountId, environment: 'live' }, { contactId: a.id, stageKey: 'lead', changedBy: 'auto' }),
  );
  expect(await eventsOf(o.tenant.accountId)).toEqual([]);
  const stop = new AbortController();
  const sweep = runCrmOutboxSweep(api.deps, { intervalMs: 50, olderThanMs: 0, signal: stop.signal });
  const [event] = await eventually(async () => {
    const events = await eventsOf(o.tenant.accountId);
    return events.length > 0 ? events : undefined;
  });
  expect(event!.data).toMatchObject({ contact: { id: a.id }, new_stage: { key: 'lead' }, changed_by: 'auto' });
  await new Promise((r) => setTimeout(r, 200));
  expect(await eventsOf(o.tenant.accountId)).toHaveLength(1);
  stop.abort();
  await sweep;
});
