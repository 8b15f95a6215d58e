/**
 * Holds on real Postgres: what an endpoint owes while it does not send is held and not claimed,
 * and is due again once released; a hold asked for an endpoint that sends (the workflow's view was
 * old) holds nothing; a delivery a session is sending when the hold comes keeps its lease through
 * the hold and a release, so no other session claims and POSTs it again.
 */
import { describe, expect, it } from 'vitest';
import { holdOpenDeliveries, releaseHeldDeliveries } from '../../src/db/deliveries.js';
import { eventually, testDb } from '../support/harness.js';
import { sessionTestBed } from '../support/session-test-bed.js';

const bed = sessionTestBed('holds');

const statusesOf = async (endpointId: string) =>
  (await testDb().query<{ status: string }>(`SELECT status FROM deliveries WHERE endpoint_id = $1`, [endpointId])).rows.map(
    (r) => r.status,
  );

/** The endpoint as the API leaves it: sending (active) or not (deactivated). */
const setActive = (endpointId: string, active: boolean) =>
  testDb().query(`UPDATE endpoints SET active = $2 WHERE id = $1`, [endpointId, active]);

describe('holds of an endpoint that does not send', () => {
  it('keep what it owes from every claim until released, then it is due again', async () => {
    const e = await bed.endpointWithBacklog(2);
    await setActive(e.id, false);
    expect(await holdOpenDeliveries(testDb(), e.id, new Date())).toBe(2);
    expect(await bed.claimedByAnother(e.id)).toEqual([]);
    await setActive(e.id, true);
    expect(await releaseHeldDeliveries(testDb(), e.id, new Date())).toBe(2);
    expect(await bed.claimedByAnother(e.id)).toHaveLength(2);
  });

  it('hold nothing of an endpoint that sends as committed now, whatever the workflow last read of it', async () => {
    const e = await bed.endpointWithBacklog(2);
    expect(await holdOpenDeliveries(testDb(), e.id, new Date())).toBe(0);
    expect(await bed.claimedByAnother(e.id)).toHaveLength(2);
  });

  it('leave a delivery whose POST is in flight to its session: a hold and a release meanwhile let nobody else send it', async () => {
    const e = await bed.endpointWithBacklog(1);
    let answer!: () => void;
    bed.receiver.replyOn(e.prefix, { status: 200, hold: new Promise<void>((r) => (answer = r)) });
    const running = bed.session(e.id, { concurrency: 2, maxSessionMs: 30_000 });
    await eventually(async () => e.posts().length === 1);
    // Deactivated and activated again while the POST is in flight: the workflow holds, then releases.
    await setActive(e.id, false);
    expect(await holdOpenDeliveries(testDb(), e.id, new Date())).toBe(1);
    await setActive(e.id, true);
    await releaseHeldDeliveries(testDb(), e.id, new Date());
    expect(await bed.claimedByAnother(e.id)).toEqual([]);
    answer();
    const round = await running;
    expect(round.posts).toBe(1);
    expect(e.posts()).toHaveLength(1);
    expect(await statusesOf(e.id)).toEqual(['success']);
  });
});
