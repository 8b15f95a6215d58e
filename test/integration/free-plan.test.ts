/** The Free-plan count over time, driven through the store path with the clock passed in. */
import { describe, expect, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { samples } from '../support/catalog-samples.js';
import { createTenant, testDb } from '../support/harness.js';

const def = getEventDefinition('chatapp.message.received')!;

async function freeAccountWithEndpoint(createdAt: Date, plan: 'free' | 'trial' = 'free') {
  const tenant = await createTenant({ plan, createdAt });
  const ca = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    channel: 'chatapp',
    display: '+1',
    phoneNumberId: `fp-${tenant.accountId}`,
  });
  const { rows } = await testDb().query(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/h', '{messages}', '\\x00', 'healthy') RETURNING id`,
    [tenant.accountId],
  );
  return { tenant, channelAccount: ca, endpointId: rows[0].id as string };
}

function received(
  accountId: string,
  channelAccount: { id: string; channel: 'chatapp' | 'photoapp'; display: string },
  n: number,
  environment: 'live' | 'sandbox' = 'live',
) {
  const sample = samples['chatapp.message.received']!.data as { message: Record<string, unknown> };
  const id = `wamid.fp.${accountId}.${environment}.${n}`;
  const data = def.data.parse({ ...sample, message: { ...sample.message, id, external_id: id } });
  return ingestEvent({ accountId, environment, def, data, channelAccount, externalId: id });
}

const usage = async (accountId: string) =>
  (await testDb().query(`SELECT month::text, received_count FROM plan_usage WHERE account_id = $1 ORDER BY month`, [accountId])).rows;

describe('free-plan count across time', () => {
  it('counts per UTC month: the cap starts again on the 1st', async () => {
    const { tenant, channelAccount } = await freeAccountWithEndpoint(new Date('2026-10-02T00:00:00Z'));
    await testDb().query(`INSERT INTO plan_usage (account_id, month, received_count) VALUES ($1, '2026-11-01', 300)`, [tenant.accountId]);
    const lastOfNovember = await storeEvent(testDb(), received(tenant.accountId, channelAccount, 1), new Date('2026-11-30T23:59:59Z'));
    expect(lastOfNovember.deliveries.map((d) => d.status)).toEqual(['limited']);
    const firstOfDecember = await storeEvent(testDb(), received(tenant.accountId, channelAccount, 2), new Date('2026-12-01T00:00:00Z'));
    expect(firstOfDecember.deliveries.map((d) => d.status)).toEqual(['pending']);
    expect(await usage(tenant.accountId)).toEqual([
      { month: '2026-11-01', received_count: 301 },
      { month: '2026-12-01', received_count: 1 },
    ]);
  });

  it('an Account created up to 30 September 2026 is counted from 1 November 2026', async () => {
    const { tenant, channelAccount } = await freeAccountWithEndpoint(new Date('2026-09-30T12:00:00Z'));
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 1), new Date('2026-10-31T23:00:00Z'));
    expect(await usage(tenant.accountId)).toEqual([]);
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 2), new Date('2026-11-01T00:00:00Z'));
    expect(await usage(tenant.accountId)).toEqual([{ month: '2026-11-01', received_count: 1 }]);
  });

  it('an Account created from 1 October 2026 is counted from the start', async () => {
    const { tenant, channelAccount } = await freeAccountWithEndpoint(new Date('2026-10-01T00:00:00Z'));
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 1), new Date('2026-10-01T08:00:00Z'));
    expect(await usage(tenant.accountId)).toEqual([{ month: '2026-10-01', received_count: 1 }]);
  });

  it('a trial is not counted in its 14 days, and is afterwards', async () => {
    const { tenant, channelAccount } = await freeAccountWithEndpoint(new Date('2026-11-01T00:00:00Z'), 'trial');
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 1), new Date('2026-11-14T23:59:59Z'));
    expect(await usage(tenant.accountId)).toEqual([]);
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 2), new Date('2026-11-15T00:00:00Z'));
    expect(await usage(tenant.accountId)).toEqual([{ month: '2026-11-01', received_count: 1 }]);
  });

  it('sandbox messages are outside the count, and a repeat counts once', async () => {
    const { tenant, channelAccount } = await freeAccountWithEndpoint(new Date('2026-10-05T00:00:00Z'));
    const now = new Date('2026-11-10T00:00:00Z');
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 1, 'sandbox'), now);
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 2), now);
    await storeEvent(testDb(), received(tenant.accountId, channelAccount, 2), now);
    expect(await usage(tenant.accountId)).toEqual([{ month: '2026-11-01', received_count: 1 }]);
  });
});

describe('free-plan count across a batch', () => {
  it('concurrent messages share a transaction and are counted once each in cursor order: exactly those past 300 are limited', async () => {
    const { tenant, channelAccount } = await freeAccountWithEndpoint(new Date('2026-10-02T00:00:00Z'));
    await testDb().query(`INSERT INTO plan_usage (account_id, month, received_count) VALUES ($1, '2026-11-01', 295)`, [tenant.accountId]);
    const now = new Date('2026-11-10T00:00:00Z');
    // Ten messages and one repeat of the first, all in one tick: one batch.
    const calls = [...Array.from({ length: 10 }, (_, i) => i + 1), 1].map((n) =>
      storeEvent(testDb(), received(tenant.accountId, channelAccount, n), now),
    );
    const stored = await Promise.all(calls);
    expect(stored.map((s) => s.created)).toEqual([...Array(10).fill(true), false]);
    const byCursor = stored.slice(0, 10).sort((a, b) => Number(a.event.cursor) - Number(b.event.cursor));
    expect(byCursor.map((s) => s.deliveries.map((d) => d.status))).toEqual([...Array(5).fill(['pending']), ...Array(5).fill(['limited'])]);
    expect(await usage(tenant.accountId)).toEqual([{ month: '2026-11-01', received_count: 305 }]);
    const { rows: limited } = await testDb().query(
      `SELECT e.cursor::int AS cursor, d.status, d.terminal_reason, d.next_attempt_at IS NULL AS undue
       FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.account_id = $1 AND d.status = 'limited' ORDER BY e.cursor`,
      [tenant.accountId],
    );
    expect(limited).toEqual(
      [6, 7, 8, 9, 10].map((cursor) => ({ cursor, status: 'limited', terminal_reason: 'free_plan_limit', undue: true })),
    );
    // The 300th message crossed the last warning threshold: one warning, queued once.
    const { rows: warnings } = await testDb().query(`SELECT dedupe_key FROM notifications WHERE account_id = $1`, [tenant.accountId]);
    expect(warnings).toEqual([{ dedupe_key: `free_plan_warning:${tenant.accountId}:2026-11-01:300` }]);
  });
});
