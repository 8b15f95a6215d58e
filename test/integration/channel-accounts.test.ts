/** Channel accounts (account:read) and the photoapp token status (SPEC 3.4) on real Postgres and the local provider. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannelAccount } from '../../src/db/directory.js';
import type { ProviderHttp } from '../../src/channels/provider-http.js';
import { getPhotoappToken, storePhotoappToken, storeRenewedToken } from '../../src/db/photoapp-tokens.js';
import { createTenant, testDb, type Tenant } from '../support/harness.js';
import { connectPhotoappAccount, startApiWithProvider, type ApiWithProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider();
  await bed.control('/settings', { auto_statuses: false });
});
afterAll(() => bed.close());

const DAY = 86_400;
const unix = () => Math.floor(Date.now() / 1000);

async function photoappSetup(tenant?: Tenant) {
  const t = tenant ?? (await createTenant());
  const ig = await connectPhotoappAccount(bed, t, { expires_at: unix() + 30 * DAY });
  return { tenant: t, igId: ig.providerAccountId, id: ig.channelAccountId };
}

const sendTo = (key: string, channelAccountId: string) =>
  bed.api.request('POST', '/api/v1/messages', {
    key,
    body: { channel_account_id: channelAccountId, to: 'igsid-9', type: 'text', text: { body: 'hi' } },
  });
const read = (key: string, id: string) => bed.api.request('GET', `/api/v1/channel_accounts/${id}`, { key });
const messageCount = async (id: string) =>
  Number((await testDb().query(`SELECT count(*) FROM messages WHERE channel_account_id = $1`, [id])).rows[0].count);

describe('photoapp token status', () => {
  it('is unknown until read, then re-checked before each send: ok, expiring (within 7 days)', async () => {
    const s = await photoappSetup();
    expect((await read(s.tenant.key, s.id)).body.data).toMatchObject({
      channel: 'photoapp',
      token_status: 'unknown',
      token_expires_at: null,
    });
    expect((await sendTo(s.tenant.key, s.id)).status).toBe(202);
    const ok = (await read(s.tenant.key, s.id)).body.data;
    expect(ok.token_status).toBe('ok');
    expect(Date.parse(ok.token_expires_at)).toBeGreaterThan(Date.now() + 29 * DAY * 1000);

    await bed.control(`/photoapp_accounts/${s.igId}/token_status`, { expires_at: unix() + 6 * DAY });
    expect((await sendTo(s.tenant.key, s.id)).status).toBe(202);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('expiring');
    await bed.control(`/photoapp_accounts/${s.igId}/token_status`, { expires_at: unix() + 8 * DAY });
    expect((await sendTo(s.tenant.key, s.id)).status).toBe(202);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('ok');
  });

  it.each(['expired', 'invalid', 'revoked'])('while %s a send is 409 reconnect_required and registers nothing', async (status) => {
    const s = await photoappSetup();
    await bed.control(`/photoapp_accounts/${s.igId}/token_status`, { token_status: status });
    const res = await sendTo(s.tenant.key, s.id);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('reconnect_required');
    expect(await messageCount(s.id)).toBe(0);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe(status);
    // Reconnected (a fresh token): sending works again.
    await bed.control(`/photoapp_accounts/${s.igId}/token_status`, { token_status: 'ok', expires_at: unix() + 60 * DAY });
    expect((await sendTo(s.tenant.key, s.id)).status).toBe(202);
  });

  it('a token that ran out by its date is expired', async () => {
    const s = await photoappSetup();
    await bed.control(`/photoapp_accounts/${s.igId}/token_status`, { expires_at: unix() - 60 });
    expect((await sendTo(s.tenant.key, s.id)).body.error.code).toBe('reconnect_required');
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('expired');
  });
});

describe('photoapp accounts use their own token (SPEC 3.4)', () => {
  it('sends and token reads carry the account’s own token; the provider refuses the app’s token for a photoapp account', async () => {
    const s = await photoappSetup();
    expect((await sendTo(s.tenant.key, s.id)).status).toBe(202);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('ok');
    // What the platform did before: the app's token, which the provider does not take for an account.
    const withAppToken = bed.api.deps.providerApi!.get(`/${s.igId}`, { fields: 'token_info' });
    await expect(withAppToken).rejects.toMatchObject({ providerCode: 190 });
  });

  it('a send whose token maintenance renewed between its read and the provider’s call is sent again with the new token, not 409', async () => {
    const s = await photoappSetup();
    const real = bed.api.deps.providerApi!;
    let renewals = 0;
    // Maintenance renews the token (provider and database) just before the send reaches the provider.
    const racing: ProviderHttp = {
      get: (path, query, token) => real.get(path, query, token),
      async post(path, body, token) {
        if (path.endsWith('/messages') && renewals++ === 0) {
          const stored = (await getPhotoappToken(testDb(), s.id))!;
          const grant = await real.get<{ access_token: string }>('/refresh_access_token', { grant_type: 'ig_refresh_token' }, token);
          const box = bed.api.deps.secretBox;
          await storeRenewedToken(testDb(), s.id, stored, box.seal(grant.access_token), { status: 'ok', expiresAt: null });
        }
        return real.post(path, body, token);
      },
    };
    const res = await bed.withProvider(racing, () => sendTo(s.tenant.key, s.id));
    expect(res.status).toBe(202);
    expect(await messageCount(s.id)).toBe(1);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('ok');
  });

  it('a stored token the provider no longer knows reads invalid and its send is 409 reconnect_required, registering nothing', async () => {
    const s = await photoappSetup();
    await storePhotoappToken(testDb(), s.id, bed.api.deps.secretBox.seal('IGAA-not-a-token-the-provider-issued'));
    const res = await sendTo(s.tenant.key, s.id);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('reconnect_required');
    expect(await messageCount(s.id)).toBe(0);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('invalid');
  });

  it('an account without a token of its own (never connected through a setup link) is 409 reconnect_required and reads invalid', async () => {
    const tenant = await createTenant();
    const ig = await bed.control('/photoapp_accounts', {});
    const ca = await createChannelAccount(testDb(), {
      accountId: tenant.accountId,
      channel: 'photoapp',
      display: '@bare',
      providerAccountId: ig.id,
    });
    const res = await sendTo(tenant.key, ca.id);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('reconnect_required');
    expect((await read(tenant.key, ca.id)).body.data.token_status).toBe('invalid');
  });

  it('the token is never in an answer nor stored in the clear', async () => {
    const tenant = await createTenant();
    const ig = await connectPhotoappAccount(bed, tenant);
    expect((await sendTo(tenant.key, ig.channelAccountId)).status).toBe(202);
    const one = await read(tenant.key, ig.channelAccountId);
    const list = await bed.api.request('GET', '/api/v1/channel_accounts', { key: tenant.key });
    expect(JSON.stringify([one.body, list.body])).not.toContain(ig.accessToken);
    const { rows } = await testDb().query(`SELECT token_ciphertext FROM channel_account_tokens WHERE channel_account_id = $1`, [
      ig.channelAccountId,
    ]);
    expect(rows[0].token_ciphertext.includes(Buffer.from(ig.accessToken))).toBe(false);
    expect(bed.api.deps.secretBox.open(rows[0].token_ciphertext)).toBe(ig.accessToken);
  });

  it('a read says expiring once the stored expiry is within 7 days, and expired once it passed, without a send', async () => {
    const s = await photoappSetup();
    expect((await sendTo(s.tenant.key, s.id)).status).toBe(202);
    const setExpiry = (days: number) =>
      testDb().query(`UPDATE channel_accounts SET token_expires_at = now() + make_interval(days => $2) WHERE id = $1`, [s.id, days]);
    await setExpiry(6);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('expiring');
    await setExpiry(-1);
    expect((await read(s.tenant.key, s.id)).body.data.token_status).toBe('expired');
  });
});

describe('GET /api/v1/channel_accounts', () => {
  it('lists the key’s Account and environment only, paged', async () => {
    const tenant = await createTenant();
    const db = testDb();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ca = await createChannelAccount(db, {
        accountId: tenant.accountId,
        customerId: tenant.customerId,
        channel: 'chatapp',
        display: `+1 555 01${i}0`,
        phoneNumberId: `pn-list-${tenant.accountId}-${i}`,
        wabaId: `waba-list-${tenant.accountId}`,
      });
      ids.push(ca.id);
    }
    const sandbox = await createChannelAccount(db, {
      accountId: tenant.accountId,
      channel: 'chatapp',
      display: 'Sandbox',
      environment: 'sandbox',
    });
    await photoappSetup(await createTenant()); // another Account's: never listed

    const first = await bed.api.request('GET', '/api/v1/channel_accounts?limit=2', { key: tenant.key });
    expect(first.status).toBe(200);
    expect(first.body.data.map((c: { id: string }) => c.id)).toEqual(ids.slice(0, 2));
    expect(first.body.data[0]).toMatchObject({
      channel: 'chatapp',
      display: '+1 555 0100',
      customer_id: tenant.customerId,
      environment: 'live',
      phone_number_id: `pn-list-${tenant.accountId}-0`,
      waba_id: `waba-list-${tenant.accountId}`,
      quality_rating: null,
      token_status: null,
    });
    expect(first.body.paging.next).not.toBeNull();
    const second = await bed.api.request('GET', `/api/v1/channel_accounts?limit=2&after=${first.body.paging.next}`, { key: tenant.key });
    expect(second.body.data.map((c: { id: string }) => c.id)).toEqual([ids[2]]);
    expect(second.body.paging.next).toBeNull();

    const sandboxKey = await tenant.keyFor(['account:read'], 'sandbox');
    const sandboxList = await bed.api.request('GET', '/api/v1/channel_accounts', { key: sandboxKey });
    expect(sandboxList.body.data.map((c: { id: string }) => c.id)).toEqual([sandbox.id]);
    expect((await bed.api.request('GET', '/api/v1/channel_accounts?channel=photoapp', { key: tenant.key })).body.data).toEqual([]);
    expect((await bed.api.request('GET', '/api/v1/channel_accounts?after=forged', { key: tenant.key })).body.error.code).toBe(
      'invalid_cursor',
    );
  });

  it('isolation: another Account’s id is 404, the other environment 404, a missing scope 403', async () => {
    const s = await photoappSetup();
    const other = await createTenant();
    expect((await read(other.key, s.id)).status).toBe(404);
    expect((await read(s.tenant.key, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await read(s.tenant.key, 'not-a-uuid')).status).toBe(404);
    expect((await read(await s.tenant.keyFor(['account:read'], 'sandbox'), s.id)).status).toBe(404);
    const noScope = await read(await s.tenant.keyFor(['messages:write']), s.id);
    expect(noScope.status).toBe(403);
    expect(noScope.body.error.code).toBe('insufficient_scope');
    expect((await bed.api.request('GET', '/api/v1/channel_accounts', { key: await s.tenant.keyFor(['events:read']) })).status).toBe(403);
    expect((await read(await s.tenant.keyFor(['account:read']), s.id)).status).toBe(200);
  });
});
