/**
 * A worker's sessions of many endpoints claim in one statement (claimWithEndpointsFor): each gets
 * its own endpoint's due deliveries, earliest first, up to its limit, leased to it alone.
 */
import { describe, expect, it } from 'vitest';
import { claimWithEndpointsFor } from '../../src/db/deliveries.js';
import { createTenant, storeDemandEvent, testDb } from '../support/harness.js';

async function endpoint(accountId: string): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/h', '{crm}', '\\x00', 'healthy') RETURNING id`,
    [accountId],
  );
  return rows[0]!.id;
}

describe('claims shared by sessions', () => {
  it('one statement: each request gets its endpoint’s due deliveries up to its limit, leased to its owner; two of one endpoint never share one', async () => {
    const tenant = await createTenant();
    const [a, b] = [await endpoint(tenant.accountId), await endpoint(tenant.accountId)];
    for (let i = 0; i < 5; i++) await storeDemandEvent(tenant.accountId, `shared_${i}`);
    const now = new Date(Date.now() + 1_000);
    const [forA, forB, forB2, none] = (
      await claimWithEndpointsFor(
        testDb(),
        [
          { endpointId: a, now, limit: 3, owner: 'a' },
          { endpointId: b, now, limit: 2, owner: 'b' },
          { endpointId: b, now, limit: 10, owner: 'b2' },
          { endpointId: a, now: new Date(0), limit: 10, owner: 'early' },
        ],
        60_000,
      )
    ).map((c) => c.deliveries);
    expect(forA).toHaveLength(3);
    expect(forA!.every((d) => d.event !== null)).toBe(true);
    // Earliest first: the first three events stored.
    expect(forA!.map((d) => d.idempotency_key)).toEqual([0, 1, 2].map((i) => `crm:demand:shared_${i}:1`));
    const bIds = [...forB!, ...forB2!].map((d) => d.id);
    expect(new Set(bIds).size).toBe(5);
    expect(forB!.length).toBeLessThanOrEqual(2);
    expect(none).toEqual([]);
    const { rows } = await testDb().query<{ endpoint_id: string; lease_owner: string | null; n: number }>(
      `SELECT endpoint_id, lease_owner, count(*)::int AS n FROM deliveries WHERE account_id = $1 GROUP BY 1, 2`,
      [tenant.accountId],
    );
    const count = (endpointId: string, owner: string | null) =>
      rows.find((r) => r.endpoint_id === endpointId && r.lease_owner === owner)?.n ?? 0;
    expect([count(a, 'a'), count(a, null)]).toEqual([3, 2]);
    expect(count(b, 'b') + count(b, 'b2')).toBe(5);
    expect([count(b, 'b'), count(b, 'b2')]).toEqual([forB!.length, forB2!.length]);
  });
});
