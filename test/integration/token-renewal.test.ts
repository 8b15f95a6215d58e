/**
 * The maintenance run's photoapp token job (SPEC 3.4: automatic renewal) against the local
 * provider and real Postgres: tokens near expiry renewed and the new one stored sealed, stale
 * statuses read again, dead tokens left for a reconnect. Each run is limited to the test's
 * Account: test files share the database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintainPhotoappTokens } from '../../src/channels/outbound/token-maintenance.js';
import { getPhotoappToken } from '../../src/db/photoapp-tokens.js';
import { createTenant, testDb, type Tenant } from '../support/harness.js';
import { connectPhotoappAccount, startApiWithProvider, unreachableProvider, type ApiWithProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider();
  await bed.control('/settings', { auto_statuses: false });
});
afterAll(() => bed.close());

const DAY = 86_400;
const unix = () => Math.floor(Date.now() / 1000);

const runJob = (tenant: Tenant, providerApi = bed.api.deps.providerApi) =>
  maintainPhotoappTokens({ db: testDb(), providerApi, secretBox: bed.api.deps.secretBox, accountId: tenant.accountId });
const read = async (tenant: Tenant, id: string) =>
  (await bed.api.request('GET', `/api/v1/channel_accounts/${id}`, { key: tenant.key })).body.data;
const sendFrom = (tenant: Tenant, id: string) =>
  bed.api.request('POST', '/api/v1/messages', {
    key: tenant.key,
    body: { channel_account_id: id, to: 'igsid-5', type: 'text', text: { body: 'hi' } },
  });

describe('photoapp token maintenance', () => {
  it('renews a token ending within 14 days: the new token is stored sealed, the old one is dead, sends use the new one', async () => {
    const tenant = await createTenant();
    const ig = await connectPhotoappAccount(bed, tenant, { expires_at: unix() + 3 * DAY });
    const before = await getPhotoappToken(testDb(), ig.channelAccountId);

    const report = await runJob(tenant);
    expect(report).toEqual({ renewed: 1, checked: 0, failed: 0, needReconnect: 0, providerConfigured: true });
    const renewedToken = bed.provider.state.photoappAccounts.get(ig.providerAccountId)!.access_token;
    expect(renewedToken).not.toBe(ig.accessToken);
    const after = await getPhotoappToken(testDb(), ig.channelAccountId);
    expect(after!.equals(before!)).toBe(false);
    expect(after!.includes(Buffer.from(renewedToken))).toBe(false);
    expect(bed.api.deps.secretBox.open(after!)).toBe(renewedToken);
    const account = await read(tenant, ig.channelAccountId);
    expect(account.token_status).toBe('ok');
    expect(Date.parse(account.token_expires_at)).toBeGreaterThan(Date.now() + 59 * DAY * 1000);
    const { rows } = await testDb().query(`SELECT renewed_at FROM channel_account_tokens WHERE channel_account_id = $1`, [
      ig.channelAccountId,
    ]);
    expect(rows[0].renewed_at).not.toBeNull();

    // The provider no longer takes the old token; the platform sends with the new one.
    const withOld = bed.api.deps.providerApi!.get(`/${ig.providerAccountId}`, { fields: 'token_info' }, ig.accessToken);
    await expect(withOld).rejects.toMatchObject({ providerCode: 190 });
    expect((await sendFrom(tenant, ig.channelAccountId)).status).toBe(202);
  });

  it('reads again a status older than 6 hours without renewing a token far from expiry, and leaves a fresh one alone', async () => {
    const tenant = await createTenant();
    const ig = await connectPhotoappAccount(bed, tenant, { expires_at: unix() + 40 * DAY });
    expect(await runJob(tenant)).toMatchObject({ renewed: 0, checked: 1 });
    expect((await read(tenant, ig.channelAccountId)).token_status).toBe('ok');
    expect(await runJob(tenant)).toMatchObject({ renewed: 0, checked: 0 });

    // Revoked on the provider since the last read, which is now 7 hours old: the next run tells.
    await bed.control(`/photoapp_accounts/${ig.providerAccountId}/token_status`, { token_status: 'revoked' });
    await testDb().query(`UPDATE channel_accounts SET token_checked_at = now() - interval '7 hours' WHERE id = $1`, [ig.channelAccountId]);
    expect(await runJob(tenant)).toMatchObject({ renewed: 0, checked: 1, needReconnect: 1 });
    expect((await read(tenant, ig.channelAccountId)).token_status).toBe('revoked');
    expect(bed.provider.state.photoappAccounts.get(ig.providerAccountId)!.access_token).toBe(ig.accessToken);
  });

  it('does not renew an expired token (it waits for a reconnect) and reports it', async () => {
    const tenant = await createTenant();
    const ig = await connectPhotoappAccount(bed, tenant, { expires_at: unix() - 60 });
    expect(await runJob(tenant)).toMatchObject({ renewed: 0, checked: 1, needReconnect: 1 });
    expect((await read(tenant, ig.channelAccountId)).token_status).toBe('expired');
    expect(bed.provider.state.photoappAccounts.get(ig.providerAccountId)!.access_token).toBe(ig.accessToken);
    // Read just now and not renewable: the next run leaves it.
    expect(await runJob(tenant)).toMatchObject({ renewed: 0, checked: 0, needReconnect: 0 });
  });

  it('a renewal the provider cannot answer counts as failed, keeps the token, and is tried again by the next run', async () => {
    const tenant = await createTenant();
    const ig = await connectPhotoappAccount(bed, tenant, { expires_at: unix() + 5 * DAY });
    await testDb().query(
      `UPDATE channel_accounts SET token_status = 'expiring', token_expires_at = now() + interval '5 days', token_checked_at = now() WHERE id = $1`,
      [ig.channelAccountId],
    );
    expect(await runJob(tenant, unreachableProvider())).toMatchObject({ renewed: 0, failed: 1 });
    expect(bed.api.deps.secretBox.open((await getPhotoappToken(testDb(), ig.channelAccountId))!)).toBe(ig.accessToken);
    expect(await runJob(tenant)).toMatchObject({ renewed: 1, failed: 0 });
  });

  it('does nothing without a provider', async () => {
    const tenant = await createTenant();
    await connectPhotoappAccount(bed, tenant, { expires_at: unix() + 3 * DAY });
    const report = await maintainPhotoappTokens({ db: testDb(), secretBox: bed.api.deps.secretBox, accountId: tenant.accountId });
    expect(report).toEqual({ renewed: 0, checked: 0, failed: 0, needReconnect: 0, providerConfigured: false });
  });
});
