/** Fixtures of the CRM tests: a tenant with live and sandbox channel accounts, contacts, endpoints that receive. */
import crypto from 'node:crypto';
import { createChannelAccount } from '../../src/db/directory.js';
import { fromTable, type TableRow } from '../../src/db/events.js';
import { recordIncomingMessage } from '../../src/db/messaging.js';
import type { Db } from '../../src/db/pool.js';
import { createTenant, testDb, type Tenant, type TestApi } from './harness.js';

export interface CrmOrigin {
  tenant: Tenant;
  /** live chatapp, live photoapp, sandbox chatapp channel accounts */
  chatapp: { id: string; phoneNumberId: string };
  photoapp: { id: string };
  sandbox: { id: string; phoneNumberId: string };
}

/** On the run's shared database unless a test with its own database passes its pool (so do contactOn and eventsOf). */
export async function crmOrigin(db: Db = testDb()): Promise<CrmOrigin> {
  const tenant = await createTenant({ db });
  const unique = crypto.randomUUID().slice(0, 8);
  const chatapp = await createChannelAccount(db, {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: '+55 11 4000-0001',
    phoneNumberId: `pn-${unique}`,
    wabaId: `waba-${unique}`,
  });
  const photoapp = await createChannelAccount(db, { accountId: tenant.accountId, channel: 'photoapp', display: '@acme' });
  const sandbox = await createChannelAccount(db, {
    accountId: tenant.accountId,
    channel: 'chatapp',
    display: 'Sandbox',
    phoneNumberId: `sb-${unique}`,
    environment: 'sandbox',
  });
  return {
    tenant,
    chatapp: { id: chatapp.id, phoneNumberId: chatapp.phone_number_id! },
    photoapp: { id: photoapp.id },
    sandbox: { id: sandbox.id, phoneNumberId: sandbox.phone_number_id! },
  };
}

/** A contact as an incoming message creates it (with its conversation and the message). */
export async function contactOn(
  o: CrmOrigin,
  channelAccountId: string,
  c: { waId?: string; phone?: string | null; profileName?: string | null; username?: string | null } = {},
  db: Db = testDb(),
) {
  const waId = c.waId ?? `55119${crypto.randomInt(10_000_000, 99_999_999)}`;
  const rows = await recordIncomingMessage(
    db,
    { id: channelAccountId, account_id: o.tenant.accountId },
    {
      wa_id: waId,
      user_id: null,
      username: c.username ?? null,
      phone: c.phone === undefined ? `+${waId}` : c.phone,
      profile_name: c.profileName === undefined ? 'Maria' : c.profileName,
    },
    { externalId: `wamid.${crypto.randomUUID()}`, type: 'text', inbound: true },
  );
  return { id: rows.contactId, waId, conversationId: rows.conversationId, messageId: rows.messageId! };
}

/** An endpoint that receives real events: created by the API, then marked verified and healthy. */
export async function receivingEndpoint(api: TestApi, tenant: Tenant, events: string[]): Promise<string> {
  const res = await api.request('POST', '/api/v1/webhooks', { key: tenant.key, body: { url: 'https://public.example/h', events } });
  if (res.status !== 201) throw new Error(`endpoint not created: ${res.text}`);
  await testDb().query(`UPDATE endpoints SET health_status = 'healthy', active = true, verified_at = now() WHERE id = $1`, [
    res.body.data.id,
  ]);
  return res.body.data.id as string;
}

/** The stream's events of the Account, read as the service reads them (the payload decoded). */
export async function eventsOf(accountId: string, environment = 'live', db: Db = testDb()) {
  const { rows } = await db.query<TableRow>(`SELECT * FROM events WHERE account_id = $1 AND environment = $2 ORDER BY cursor`, [
    accountId,
    environment,
  ]);
  return rows.map((r) => {
    const e = fromTable(r);
    return { ...e, data: e.data as Record<string, any> };
  });
}

export async function deliveriesOf(eventId: string) {
  const { rows } = await testDb().query<{ endpoint_id: string; status: string; idempotency_key: string }>(
    `SELECT endpoint_id, status, idempotency_key FROM deliveries WHERE event_id = $1`,
    [eventId],
  );
  return rows;
}
