/** Templates on real Postgres and the local provider: sync, list filters, status notifications that emit nothing, isolation. */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChannelAccount } from '../../src/db/directory.js';
import { createTenant, testDb, type Tenant } from '../support/harness.js';
import { connectChatappNumber, startApiWithProvider, type ApiWithProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider();
});
afterAll(() => bed.close());

interface Setup {
  tenant: Tenant;
  wabaId: string;
  channelAccountId: string;
  templates: { id: string; name: string }[];
}

async function setup(
  templates = [
    { name: 'order_update', language: 'en_US', status: 'APPROVED' },
    { name: 'promo', language: 'pt_BR', status: 'PENDING', category: 'MARKETING' },
  ],
): Promise<Setup> {
  const tenant = await createTenant();
  const number = await connectChatappNumber(bed, tenant);
  const added = await bed.control(`/wabas/${number.wabaId}/templates`, { templates });
  return { tenant, wabaId: number.wabaId, channelAccountId: number.channelAccountId, templates: added.data };
}

const sync = (key: string, channelAccountId: string) =>
  bed.api.request('POST', '/api/v1/templates/sync', { key, body: { channel_account_id: channelAccountId } });
const list = (key: string, query = '') => bed.api.request('GET', `/api/v1/templates${query}`, { key });

async function streamSize(accountId: string): Promise<number> {
  const { rows } = await testDb().query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, [accountId]);
  return rows[0]!.n;
}

describe('templates', () => {
  it('are synced from the provider and listed with filters', async () => {
    const s = await setup();
    expect((await list(s.tenant.key)).body.data).toEqual([]);
    const res = await sync(s.tenant.key, s.channelAccountId);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      channel_account_id: s.channelAccountId,
      waba_id: s.wabaId,
      templates: 2,
      updated: 2,
      removed: 0,
    });

    const all = await list(s.tenant.key, `?channel_account_id=${s.channelAccountId}`);
    expect(all.status).toBe(200);
    expect(all.body.data.map((t: any) => [t.name, t.language, t.status])).toEqual(
      expect.arrayContaining([
        ['order_update', 'en_US', 'APPROVED'],
        ['promo', 'pt_BR', 'PENDING'],
      ]),
    );
    const promo = all.body.data.find((t: any) => t.name === 'promo');
    expect(promo).toMatchObject({
      waba_id: s.wabaId,
      provider_template_id: s.templates[1]!.id,
      category: 'MARKETING',
      status_reason: null,
    });
    expect(promo.components.length).toBeGreaterThan(0);

    expect((await list(s.tenant.key, '?status=approved')).body.data.map((t: any) => t.name)).toEqual(['order_update']);
    expect((await list(s.tenant.key, '?name=promo')).body.data.map((t: any) => t.name)).toEqual(['promo']);
    expect((await list(s.tenant.key, '?status=nope')).body.error.code).toBe('invalid_status');
    expect((await list(s.tenant.key, '?after=forged')).body.error.code).toBe('invalid_cursor');

    // A second sync with nothing new changes nothing.
    expect((await sync(s.tenant.key, s.channelAccountId)).body.data).toMatchObject({ templates: 2, updated: 0, removed: 0 });
  });

  it('follows the provider’s pages and pages its own list', async () => {
    const many = Array.from({ length: 130 }, (_, i) => ({
      name: `t_${String(i).padStart(3, '0')}`,
      language: 'en_US',
      status: 'APPROVED',
    }));
    const s = await setup(many);
    expect((await sync(s.tenant.key, s.channelAccountId)).body.data.templates).toBe(130);
    const seen = new Set<string>();
    let after: string | null = null;
    do {
      const page: any = await list(s.tenant.key, `?limit=100${after ? `&after=${after}` : ''}`);
      for (const t of page.body.data) seen.add(t.name);
      after = page.body.paging.next;
    } while (after);
    expect(seen.size).toBe(130);
  });

  it('a status change notified by the provider updates the template and emits nothing', async () => {
    const s = await setup();
    await sync(s.tenant.key, s.channelAccountId);
    const before = await streamSize(s.tenant.accountId);
    const beforeStream = await bed.api.request('GET', '/api/v1/events', { key: s.tenant.key });

    const res = await bed.control(`/templates/${s.templates[1]!.id}/status`, { status: 'REJECTED', reason: 'INVALID_FORMAT' });
    expect(res.notification_status).toBe(200);

    const promo = (await list(s.tenant.key, '?name=promo')).body.data[0];
    expect(promo).toMatchObject({ status: 'REJECTED', status_reason: 'INVALID_FORMAT' });
    expect(await streamSize(s.tenant.accountId)).toBe(before);
    const afterStream = await bed.api.request('GET', '/api/v1/events', { key: s.tenant.key });
    expect(afterStream.body.data).toEqual(beforeStream.body.data);
    const { rows } = await testDb().query(`SELECT 1 FROM deliveries WHERE account_id = $1`, [s.tenant.accountId]);
    expect(rows).toHaveLength(0);

    // Approved later: the reason goes with the old status.
    await bed.control(`/templates/${s.templates[1]!.id}/status`, { status: 'APPROVED' });
    expect((await list(s.tenant.key, '?name=promo')).body.data[0]).toMatchObject({ status: 'APPROVED', status_reason: null });
  });

  it('isolation: another Account, the other environment, scopes, a photoapp account', async () => {
    const s = await setup();
    await sync(s.tenant.key, s.channelAccountId);
    const other = await createTenant();
    expect((await sync(other.key, s.channelAccountId)).status).toBe(404);
    expect((await list(other.key, `?channel_account_id=${s.channelAccountId}`)).status).toBe(404);
    expect((await list(other.key)).body.data).toEqual([]);

    const sandbox = await s.tenant.keyFor(['account:read', 'account:write'], 'sandbox');
    expect((await sync(sandbox, s.channelAccountId)).status).toBe(404);
    expect((await list(sandbox, `?channel_account_id=${s.channelAccountId}`)).status).toBe(404);
    expect((await list(sandbox)).body.data).toEqual([]);

    const readOnly = await s.tenant.keyFor(['account:read']);
    const refused = await sync(readOnly, s.channelAccountId);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('insufficient_scope');
    expect((await list(readOnly)).body.data).toHaveLength(2);
    expect((await list(await s.tenant.keyFor(['webhooks:read']))).status).toBe(403);

    expect((await sync(s.tenant.key, crypto.randomUUID())).status).toBe(404);
    expect((await sync(s.tenant.key, 'not-a-uuid')).status).toBe(422);
    const photo = await createChannelAccount(testDb(), { accountId: s.tenant.accountId, channel: 'photoapp', display: 'shop' });
    expect((await sync(s.tenant.key, photo.id)).body.error.code).toBe('invalid_channel_account');
  });

  it('a sync without a provider is 503, a provider refusal 502', async () => {
    const s = await setup();
    const unset = await bed.withProvider(undefined, () => sync(s.tenant.key, s.channelAccountId));
    expect(unset.status).toBe(503);
    expect(unset.body.error.code).toBe('provider_not_configured');
    const ghost = await createChannelAccount(testDb(), {
      accountId: s.tenant.accountId,
      channel: 'chatapp',
      display: 'ghost',
      phoneNumberId: `pn${crypto.randomBytes(6).toString('hex')}`,
      wabaId: 'unknown-waba',
    });
    const res = await sync(s.tenant.key, ghost.id);
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('provider_error');
  });
});
