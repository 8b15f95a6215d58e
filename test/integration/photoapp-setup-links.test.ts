/**
 * Photoapp accounts connected and reconnected through setup links (SPEC 3.4) on real Postgres
 * and the local provider, which plays the provider's login: the account's own token is stored
 * sealed, never shown, and used by sends; a reconnect replaces a dead token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, testDb, type Tenant } from '../support/harness.js';
import { startApiWithProvider, type ApiWithProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider();
  await bed.control('/settings', { auto_statuses: false });
});
afterAll(() => bed.close());

async function photoappLink(tenant: Tenant, body: Record<string, unknown> = {}) {
  return bed.api.request('POST', `/api/v1/customers/${tenant.customerId}/setup_links`, {
    key: tenant.key,
    body: { channel: 'photoapp', ...body },
  });
}

/** The Customer's browser through the provider's login (the local provider), ending on the link's completion. */
async function login(setupUrl: string, account?: { id?: string; username?: string }) {
  return bed.control('/photoapp/signup/complete', { setup_url: setupUrl, ...(account ? { account } : {}) });
}

const sendFrom = (tenant: Tenant, channelAccountId: string) =>
  bed.api.request('POST', '/api/v1/messages', {
    key: tenant.key,
    body: { channel_account_id: channelAccountId, to: 'igsid-77', type: 'text', text: { body: 'hi' } },
  });
const readAccount = (tenant: Tenant, id: string) => bed.api.request('GET', `/api/v1/channel_accounts/${id}`, { key: tenant.key });

describe('photoapp setup links', () => {
  it('connect the authorized account with its own token, sealed at rest and never shown; sends use it', async () => {
    const tenant = await createTenant();
    const created = await photoappLink(tenant);
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ channel: 'photoapp', status: 'open' });

    const done = await login(created.body.data.url, { username: 'corner.bakery' });
    expect(done.platform.status).toBe(200);
    const result = done.platform.body.data;
    expect(result).toMatchObject({
      setup_link_id: created.body.data.id,
      channel: 'photoapp',
      provider_account_id: done.account.id,
      username: 'corner.bakery',
      reconnected: false,
    });
    const token = bed.provider.state.photoappAccounts.get(done.account.id)!.access_token;
    expect(JSON.stringify(done.platform.body)).not.toContain(token);

    const account = await readAccount(tenant, result.channel_account_id);
    expect(account.body.data).toMatchObject({
      channel: 'photoapp',
      display: '@corner.bakery',
      customer_id: tenant.customerId,
      provider_account_id: done.account.id,
      token_status: 'ok',
    });
    expect(Date.parse(account.body.data.token_expires_at)).toBeGreaterThan(Date.now() + 59 * 86_400_000);
    expect(JSON.stringify(account.body)).not.toContain(token);
    const { rows } = await testDb().query(`SELECT token_ciphertext FROM channel_account_tokens WHERE channel_account_id = $1`, [
      result.channel_account_id,
    ]);
    expect(rows[0].token_ciphertext.includes(Buffer.from(token))).toBe(false);
    expect(bed.api.deps.secretBox.open(rows[0].token_ciphertext)).toBe(token);

    expect((await sendFrom(tenant, result.channel_account_id)).status).toBe(202);
    const listed = await bed.api.request('GET', `/api/v1/customers/${tenant.customerId}/setup_links`, { key: tenant.key });
    expect(listed.body.data[0]).toMatchObject({ id: created.body.data.id, channel: 'photoapp', status: 'completed' });
  });

  it('reconnect a revoked account: a new link for the same account replaces its token and sending works again', async () => {
    const tenant = await createTenant();
    const first = await login((await photoappLink(tenant)).body.data.url);
    const channelAccountId = first.platform.body.data.channel_account_id;
    await bed.control(`/photoapp_accounts/${first.account.id}/token_status`, { token_status: 'revoked' });
    const refused = await sendFrom(tenant, channelAccountId);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('reconnect_required');
    expect((await readAccount(tenant, channelAccountId)).body.data.token_status).toBe('revoked');

    const again = await login((await photoappLink(tenant)).body.data.url, { id: first.account.id });
    expect(again.platform.body.data).toMatchObject({ channel_account_id: channelAccountId, reconnected: true });
    expect((await readAccount(tenant, channelAccountId)).body.data.token_status).toBe('ok');
    expect((await sendFrom(tenant, channelAccountId)).status).toBe(202);
    const { rows } = await testDb().query(`SELECT count(*)::int AS n FROM channel_accounts WHERE provider_account_id = $1`, [
      first.account.id,
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('refuse an account another Account holds (409), a used code (422), a business account on a photoapp link (422), and connection_mode with photoapp (422)', async () => {
    const owner = await createTenant();
    const first = await login((await photoappLink(owner)).body.data.url);
    const other = await createTenant();
    const taken = await login((await photoappLink(other)).body.data.url, { id: first.account.id });
    expect(taken.platform.status).toBe(409);
    expect(taken.platform.body.error.code).toBe('channel_account_in_use');

    const url: string = (await photoappLink(owner)).body.data.url;
    const complete = (body: unknown) => bed.api.request('POST', `${new URL(url).pathname}/complete`, { body });
    const used = await complete({ code: first.code });
    expect(used.status).toBe(422);
    expect(used.body.error.code).toBe('invalid_signup_code');
    expect((await complete({ code: 'x', waba_id: '1' })).status).toBe(422);
    expect((await photoappLink(owner, { connection_mode: 'coexistence' })).status).toBe(422);
  });
});
