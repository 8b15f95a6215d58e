/**
 * The account-wide delivery list has no index of its own (migration 0031): it merges the first rows
 * of each of the Account's endpoints. Newest first across endpoints, deleted endpoints included,
 * filters applied, keyset pages both ways, and nothing of another Account.
 */
import { describe, expect, it } from 'vitest';
import { listDeliveries, type DeliveryRow } from '../../src/db/deliveries.js';
import { createTenant, testDb } from '../support/harness.js';

async function endpointOf(accountId: string): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext) VALUES ($1, 'https://public.example/h', '{crm}', '\\x00') RETURNING id`,
    [accountId],
  );
  return rows[0]!.id;
}

/** `n` deliveries of the endpoint at the given seconds past a base time, statuses alternating. */
async function deliveriesAt(accountId: string, endpointId: string, seconds: number[]): Promise<void> {
  await testDb().query(
    `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, environment, status, created_at)
     SELECT $1, $2, 'crm.demand.created', 'k' || s, 'live', CASE WHEN s % 2 = 0 THEN 'success' ELSE 'failed' END,
            timestamptz '2026-11-01 10:00:00+00' + s * interval '1 second'
     FROM unnest($3::int[]) AS s`,
    [accountId, endpointId, seconds],
  );
}

const ids = (rows: DeliveryRow[]) => rows.map((r) => r.id);

describe('the account-wide delivery list', () => {
  it('pages newest first across the endpoints, a deleted one included, with filters, both ways', async () => {
    const t = await createTenant();
    const other = await createTenant();
    const [a, b, gone] = [await endpointOf(t.accountId), await endpointOf(t.accountId), await endpointOf(t.accountId)];
    await deliveriesAt(t.accountId, a, [1, 4, 7, 10, 13]);
    await deliveriesAt(t.accountId, b, [2, 5, 8, 11]);
    await deliveriesAt(t.accountId, gone, [3, 6, 9, 12]);
    await testDb().query(`UPDATE endpoints SET deleted_at = now() WHERE id = $1`, [gone]);
    await deliveriesAt(other.accountId, await endpointOf(other.accountId), [1, 2, 3, 14]);

    const { rows: expected } = await testDb().query<{ id: string; status: string }>(
      `SELECT id, status FROM deliveries WHERE account_id = $1 ORDER BY created_at DESC, id DESC`,
      [t.accountId],
    );
    expect(expected).toHaveLength(13);
    const seen: string[] = [];
    let page = await listDeliveries(testDb(), t.accountId, {}, { limit: 4 });
    const pages = [page];
    while (page.length > 0) {
      seen.push(...ids(page.slice(0, 4)));
      if (page.length <= 4) break;
      page = await listDeliveries(testDb(), t.accountId, {}, { limit: 4, after: page[3]!.page_key });
      pages.push(page);
    }
    expect(seen).toEqual(expected.map((r) => r.id));
    // Back from the third page: the second again.
    const back = await listDeliveries(testDb(), t.accountId, {}, { limit: 4, before: pages[2]![0]!.page_key });
    expect(ids(back).slice(-4)).toEqual(ids(pages[1]!).slice(0, 4));

    const failed = await listDeliveries(testDb(), t.accountId, { status: 'failed' }, { limit: 100 });
    expect(ids(failed)).toEqual(expected.filter((r) => r.status === 'failed').map((r) => r.id));
    const ofB = await listDeliveries(testDb(), t.accountId, { endpointId: b }, { limit: 100 });
    expect(ofB.map((r) => r.endpoint_id)).toEqual([b, b, b, b]);
  });
});
