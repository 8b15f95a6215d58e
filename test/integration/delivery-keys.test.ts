/**
 * The deliveries' one foreign key (migration 0018): a delivery names an endpoint of its own
 * Account, and deleting an Account still removes its deliveries (through its endpoints).
 */
import { describe, expect, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { deleteAccount } from '../../src/db/directory.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { createTenant, testDb } from '../support/harness.js';

const def = getEventDefinition('crm.demand.created')!;

async function endpoint(accountId: string): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/h', '{crm}', '\\x00', 'healthy') RETURNING id`,
    [accountId],
  );
  return rows[0]!.id;
}

const deliveriesOf = async (accountId: string) =>
  (await testDb().query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE account_id = $1`, [accountId])).rows[0]!.n;

describe('delivery keys', () => {
  it("refuses a delivery naming another Account's endpoint", async () => {
    const [mine, theirs] = [await createTenant(), await createTenant()];
    const theirEndpoint = await endpoint(theirs.accountId);
    await expect(
      testDb().query(
        `INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, status) VALUES ($1, $2, 'webhook.test', 'test:x', 'success')`,
        [mine.accountId, theirEndpoint],
      ),
    ).rejects.toMatchObject({ code: '23503' });
  });

  it("deleting an Account removes its deliveries with its endpoints, and no other Account's", async () => {
    const [doomed, other] = [await createTenant(), await createTenant()];
    for (const t of [doomed, other]) {
      await endpoint(t.accountId);
      await endpoint(t.accountId);
      const data = def.data.parse({
        entity_type: 'demand',
        entity_id: 'dem_1',
        before_data: null,
        after_data: { id: 'dem_1', version: 1, status: 'open', contact_id: 'c', title: 'Demand' },
        actor_user_id: null,
      });
      await storeEvent(testDb(), ingestEvent({ accountId: t.accountId, environment: 'live', def, data }));
    }
    expect([await deliveriesOf(doomed.accountId), await deliveriesOf(other.accountId)]).toEqual([2, 2]);
    expect(await deleteAccount(testDb(), doomed.accountId)).toBe(true);
    expect([await deliveriesOf(doomed.accountId), await deliveriesOf(other.accountId)]).toEqual([0, 2]);
  });
});
