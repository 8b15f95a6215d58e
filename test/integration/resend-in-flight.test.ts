/**
 * A resend on real Postgres while a session POSTs the same delivery: the resend is refused with
 * `delivery_in_flight` and leaves the lease alone, so no other session claims and POSTs it again;
 * once the POST's outcome is recorded, a resend of the failed delivery goes through.
 */
import { describe, expect, it } from 'vitest';
import { resendDelivery } from '../../src/db/deliveries.js';
import { eventually, testDb } from '../support/harness.js';
import { sessionTestBed } from '../support/session-test-bed.js';

const bed = sessionTestBed('resend');

const deliveryOf = async (endpointId: string) =>
  (
    await testDb().query<{ id: string; account_id: string; status: string }>(
      `SELECT id, account_id, status FROM deliveries WHERE endpoint_id = $1`,
      [endpointId],
    )
  ).rows[0]!;

describe('a resend of a delivery whose POST is in flight', () => {
  it('is refused as delivery_in_flight, and nobody else claims or POSTs it meanwhile', async () => {
    const e = await bed.endpointWithBacklog(1);
    const d = await deliveryOf(e.id);
    // A retry of a failed delivery, due now: the session below claims it as such.
    await testDb().query(`UPDATE deliveries SET status = 'failed', attempts = 1 WHERE id = $1`, [d.id]);
    let answer!: () => void;
    bed.receiver.replyOn(e.prefix, { status: 500, hold: new Promise<void>((r) => (answer = r)) });
    const running = bed.session(e.id, { concurrency: 2, maxSessionMs: 30_000 });
    await eventually(async () => e.posts().length === 1);

    await expect(resendDelivery(testDb(), d.account_id, d.id)).rejects.toMatchObject({ status: 409, code: 'delivery_in_flight' });
    expect(await bed.claimedByAnother(e.id)).toEqual([]);

    answer();
    await running;
    expect(e.posts()).toHaveLength(1);
    expect((await deliveryOf(e.id)).status).toBe('failed');
    // Its outcome recorded, the failed delivery is resent as any other.
    expect(await resendDelivery(testDb(), d.account_id, d.id)).toMatchObject({ id: d.id, status: 'pending' });
  });
});
