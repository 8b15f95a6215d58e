/**
 * Setup links and the embedded signup's completion on real Postgres and the local provider:
 * chatapp.phone_number.connected once per (link, number), the endpoint's Customer filter,
 * expired and unknown links, isolation.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannelAccount, createCustomer } from '../../src/db/directory.js';
import { fromTable, type TableRow } from '../../src/db/events.js';
import { createTenant, testDb, type Tenant } from '../support/harness.js';
import { startApiWithProvider, type ApiWithProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider();
});
afterAll(() => bed.close());

const digits = () => String(crypto.randomInt(1_000_000, 9_999_999));

async function createLink(key: string, customerId: string, body: Record<string, unknown> = {}) {
  return bed.api.request('POST', `/api/v1/customers/${customerId}/setup_links`, { key, body });
}

/** The Customer's browser through the local provider: registers the waba and calls the link's completion. */
async function signup(setupUrl: string, waba: Record<string, unknown>, connectionMode?: string) {
  return bed.control('/signup/complete', { setup_url: setupUrl, waba, ...(connectionMode ? { connection_mode: connectionMode } : {}) });
}

async function connectedEvents(accountId: string, phoneNumberId: string) {
  const { rows } = await testDb().query<TableRow>(
    `SELECT * FROM events WHERE account_id = $1 AND type = 'chatapp.phone_number.connected' ORDER BY cursor`,
    [accountId],
  );
  return rows.map(fromTable).filter((e) => e.data.phone_number_id === phoneNumberId);
}

async function verifiedEndpoint(tenant: Tenant, customerId: string | null): Promise<string> {
  const ep = await bed.api.request('POST', '/api/v1/webhooks', {
    key: tenant.key,
    body: { url: 'https://public.example/h', events: ['account'], customer_id: customerId },
  });
  await testDb().query(`UPDATE endpoints SET health_status = 'healthy', verified_at = now() WHERE id = $1`, [ep.body.data.id]);
  return ep.body.data.id;
}

describe('setup links', () => {
  it('are created for a Customer of the key’s Account and listed', async () => {
    const tenant = await createTenant();
    const res = await createLink(tenant.key, tenant.customerId, { connection_mode: 'coexistence', expires_in: 3600 });
    expect(res.status).toBe(201);
    const link = res.body.data;
    expect(link).toMatchObject({
      customer_id: tenant.customerId,
      environment: 'live',
      connection_mode: 'coexistence',
      status: 'open',
      completed_at: null,
    });
    expect(link.url).toMatch(new RegExp(`^${bed.api.url}/setup/setup_[\\w-]{43}$`));
    const ttl = new Date(link.expires_at).getTime() - new Date(link.created_at).getTime();
    expect(Math.abs(ttl - 3600_000)).toBeLessThan(5_000);
    const { rows } = await testDb().query(`SELECT token_hash FROM setup_links WHERE id = $1`, [link.id]);
    expect(rows[0].token_hash.toString('utf8')).not.toContain(link.url.split('/').pop());

    const second = await createLink(tenant.key, tenant.customerId);
    expect(second.body.data.connection_mode).toBe('dedicated');
    const listed = await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links?limit=1`, { key: tenant.key });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0].url).toBeUndefined();
    const next = await bed.api.request(
      'GET',
      `/api/v1/customers/${tenant.customerId}/setup_links?limit=1&after=${listed.body.paging.next}`,
      {
        key: tenant.key,
      },
    );
    expect([listed.body.data[0].id, next.body.data[0].id].sort()).toEqual([link.id, second.body.data.id].sort());
    expect(next.body.paging.next).toBeNull();

    expect((await createLink(tenant.key, tenant.customerId, { expires_in: 10 })).body.error.code).toBe('invalid_request');
    expect((await createLink(tenant.key, tenant.customerId, { connection_mode: 'shared' })).status).toBe(422);
  });

  it('isolation: another Account’s Customer is 404, scopes are checked, a sandbox key sees only sandbox links', async () => {
    const tenant = await createTenant();
    const other = await createTenant();
    expect((await createLink(other.key, tenant.customerId)).status).toBe(404);
    expect((await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links`, { key: other.key })).status).toBe(404);
    expect((await createLink(tenant.key, crypto.randomUUID())).status).toBe(404);
    expect((await createLink(tenant.key, 'nope')).status).toBe(404);

    const readOnly = await tenant.keyFor(['account:read']);
    const refused = await createLink(readOnly, tenant.customerId);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('insufficient_scope');
    await createLink(tenant.key, tenant.customerId);
    expect((await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links`, { key: readOnly })).body.data).toHaveLength(
      1,
    );
    const noRead = await tenant.keyFor(['webhooks:read']);
    expect((await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links`, { key: noRead })).status).toBe(403);

    const sandbox = await tenant.keyFor(['account:read', 'account:write'], 'sandbox');
    expect((await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links`, { key: sandbox })).body.data).toEqual([]);
    expect((await createLink(sandbox, tenant.customerId)).body.data.environment).toBe('sandbox');
  });
});

describe('embedded signup completion', () => {
  it('connects the numbers and emits chatapp.phone_number.connected once per (link, number), through the Customer filter', async () => {
    const tenant = await createTenant();
    const otherCustomer = await createCustomer(testDb(), { accountId: tenant.accountId, name: 'Customer B' });
    const mine = await verifiedEndpoint(tenant, tenant.customerId);
    const theirs = await verifiedEndpoint(tenant, otherCustomer.id);
    const everyone = await verifiedEndpoint(tenant, null);

    const link = (await createLink(tenant.key, tenant.customerId)).body.data;
    const wabaId = `waba${digits()}`;
    const pnid = `pn${digits()}`;
    const waba = { id: wabaId, phone_numbers: [{ id: pnid, display_phone_number: '+1 555 010 0001' }] };
    const done = await signup(link.url, waba, 'coexistence');
    expect(done.platform.status).toBe(200);
    const connected = done.platform.body.data;
    expect(connected).toMatchObject({ setup_link_id: link.id, waba_id: wabaId, skipped: [] });
    expect(connected.connected).toEqual([
      {
        channel_account_id: expect.any(String),
        phone_number_id: pnid,
        display_phone_number: '+1 555 010 0001',
        connection_mode: 'coexistence',
      },
    ]);

    const { rows: cas } = await testDb().query(`SELECT * FROM channel_accounts WHERE phone_number_id = $1`, [pnid]);
    expect(cas).toHaveLength(1);
    expect(cas[0]).toMatchObject({
      account_id: tenant.accountId,
      customer_id: tenant.customerId,
      channel: 'chatapp',
      waba_id: wabaId,
      environment: 'live',
      display: '+1 555 010 0001',
      quality_rating: 'GREEN',
      messaging_limit_tier: 'TIER_1K',
      number_status: 'CONNECTED',
    });

    const events = await connectedEvents(tenant.accountId, pnid);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      idempotency_key: `chatapp.phone_number.connected:${link.id}:${pnid}`,
      environment: 'live',
      customer_id: tenant.customerId,
      channel_account_id: cas[0].id,
    });
    expect(events[0]!.data).toMatchObject({
      waba_id: wabaId,
      phone_number_id: pnid,
      display_phone_number: '+1 555 010 0001',
      connection_mode: 'coexistence',
      setup_link_id: link.id,
    });
    const stream = await bed.api.request('GET', '/api/v1/events', { key: tenant.key });
    expect(stream.body.data.map((e: any) => e.type)).toEqual(['chatapp.phone_number.connected']);

    const { rows: deliveries } = await testDb().query(`SELECT endpoint_id FROM deliveries WHERE event_id = $1`, [events[0]!.id]);
    expect(deliveries.map((d) => d.endpoint_id).sort()).toEqual([mine, everyone].sort());
    expect(deliveries.map((d) => d.endpoint_id)).not.toContain(theirs);

    // The same link again (the Customer went through the signup twice): no new event.
    const again = await signup(link.url, waba, 'coexistence');
    expect(again.platform.status).toBe(200);
    expect(await connectedEvents(tenant.accountId, pnid)).toHaveLength(1);
    const listed = await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links`, { key: tenant.key });
    expect(listed.body.data[0]).toMatchObject({ id: link.id, status: 'completed' });
    expect(listed.body.data[0].completed_at).not.toBeNull();

    // Another link for the same number: another event, now dedicated.
    const link2 = (await createLink(tenant.key, tenant.customerId)).body.data;
    expect((await signup(link2.url, waba)).platform.body.data.connected[0].connection_mode).toBe('dedicated');
    const both = await connectedEvents(tenant.accountId, pnid);
    expect(both.map((e) => e.data.setup_link_id)).toEqual([link.id, link2.id]);
    const { rows: still } = await testDb().query(`SELECT count(*)::int AS n FROM channel_accounts WHERE phone_number_id = $1`, [pnid]);
    expect(still[0].n).toBe(1);
  });

  it('a signup that connects no number emits nothing', async () => {
    const tenant = await createTenant();
    const link = (await createLink(tenant.key, tenant.customerId)).body.data;
    const done = await signup(link.url, { id: `waba${digits()}`, phone_numbers: [] });
    expect(done.platform.status).toBe(200);
    expect(done.platform.body.data.connected).toEqual([]);
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, [tenant.accountId]);
    expect(rows[0].n).toBe(0);
  });

  it('a sandbox link connects a sandbox number, in the sandbox stream only', async () => {
    const tenant = await createTenant();
    const sandbox = await tenant.keyFor(['account:write', 'events:read'], 'sandbox');
    const link = (await createLink(sandbox, tenant.customerId)).body.data;
    const pnid = `pn${digits()}`;
    await signup(link.url, { id: `waba${digits()}`, phone_numbers: [{ id: pnid }] });
    const events = await connectedEvents(tenant.accountId, pnid);
    expect(events.map((e) => e.environment)).toEqual(['sandbox']);
    expect((await bed.api.request('GET', '/api/v1/events', { key: sandbox })).body.data).toHaveLength(1);
    expect((await bed.api.request('GET', '/api/v1/events', { key: tenant.key })).body.data).toHaveLength(0);
    const { rows } = await testDb().query(`SELECT environment FROM channel_accounts WHERE phone_number_id = $1`, [pnid]);
    expect(rows[0].environment).toBe('sandbox');
  });

  it('a number another Account holds is skipped, not taken', async () => {
    const owner = await createTenant();
    const pnid = `pn${digits()}`;
    await createChannelAccount(testDb(), {
      accountId: owner.accountId,
      channel: 'chatapp',
      display: 'theirs',
      phoneNumberId: pnid,
      wabaId: 'w',
    });
    const tenant = await createTenant();
    const link = (await createLink(tenant.key, tenant.customerId)).body.data;
    const done = await signup(link.url, { id: `waba${digits()}`, phone_numbers: [{ id: pnid }] });
    expect(done.platform.body.data).toMatchObject({ connected: [], skipped: [{ phone_number_id: pnid, reason: 'number_in_use' }] });
    const { rows } = await testDb().query(`SELECT account_id FROM channel_accounts WHERE phone_number_id = $1`, [pnid]);
    expect(rows).toEqual([{ account_id: owner.accountId }]);
    expect(await connectedEvents(tenant.accountId, pnid)).toHaveLength(0);
  });

  it('refuses an unknown or expired link, a used code and a business account the code does not grant', async () => {
    const tenant = await createTenant();
    const complete = (token: string, body: unknown) => bed.api.request('POST', `/setup/${token}/complete`, { body });

    const unknown = await complete('setup_nope', { code: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');

    const expired = (await createLink(tenant.key, tenant.customerId)).body.data;
    await testDb().query(`UPDATE setup_links SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);
    const gone = await signup(expired.url, { phone_numbers: [{}] });
    expect(gone.platform.status).toBe(410);
    expect(gone.platform.body.error.code).toBe('setup_link_expired');
    const listed = await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links`, { key: tenant.key });
    expect(listed.body.data[0].status).toBe('expired');

    const link = (await createLink(tenant.key, tenant.customerId)).body.data;
    const token = link.url.split('/').pop();
    const first = await signup(link.url, { phone_numbers: [{}] });
    expect(first.platform.status).toBe(200);
    const reused = await complete(token, { code: first.code });
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('invalid_signup_code');

    // A code for one business account cannot connect another (the browser's waba_id is checked).
    const mineWaba = await bed.control('/wabas', { phone_numbers: [{}] });
    const otherWaba = await bed.control('/wabas', { phone_numbers: [{}] });
    const { code } = await bed.control('/signup/code', { waba_id: mineWaba.id });
    const stolen = await complete(token, { code, waba_id: otherWaba.id });
    expect(stolen.status).toBe(422);
    expect(stolen.body.error.code).toBe('waba_not_granted');
    const { code: fresh } = await bed.control('/signup/code', { waba_id: mineWaba.id });
    const right = await complete(token, { code: fresh, waba_id: mineWaba.id, phone_number_id: mineWaba.phone_numbers[0].id });
    expect(right.status).toBe(200);
    expect(right.body.data.connected.map((c: any) => c.phone_number_id)).toEqual([mineWaba.phone_numbers[0].id]);

    expect((await complete(token, {})).status).toBe(422);
    expect((await complete(token, { code: 'x', extra: 1 })).status).toBe(422);
  });
});
