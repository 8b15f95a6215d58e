/**
 * A failing receiver on the time-skipping server: the retry curve, the failure streak and
 * its alerts, the pause at 15 and the 14-day hold, with hours and days skipped. Its own file
 * (and so its own server) because it skips two weeks of the server's clock.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { endpointStateQuery } from '../../src/workflows/endpoint-contract.js';
import { createTenant, testDb } from '../support/harness.js';
import { deliveryTestBed } from '../support/delivery-test-bed.js';

const bed = deliveryTestBed();
const HOUR = 60 * 60 * 1000;
const DAYS_14 = 14 * 24 * HOUR;

describe('delivery engine: a failing receiver (time skipping)', () => {
  it('retries on the curve, alerts at 5, 10 and 15, pauses at 15, holds, and expires the hold after 14 days', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, `/fail/${crypto.randomUUID()}`);
    bed.receiver.reply({ status: 500, body: 'down' });
    const workflows = bed.workflows();
    await bed.publish(tenant, 1);
    await bed.publish(tenant, 2);
    await workflows.notify(endpointId, tenant.accountId, 'created');
    const handle = bed.handle(endpointId);

    // The curve to the pause is 1+2+4+8+16+32+60*8 minutes after the first round: skip it in steps.
    for (let step = 0; step < 8 && (await bed.endpointRow(endpointId)).health_status !== 'paused'; step++) await bed.env.sleep('2 hours');
    const ep = await bed.endpointRow(endpointId);
    expect(ep).toMatchObject({ health_status: 'paused', failure_streak: 15, next_attempt_at: null });
    expect(ep.paused_at).not.toBeNull();
    const posts = bed.posts('/fail/').length;
    // The first round's two POSTs were in flight together: one failure of the streak. Then 14 probes.
    expect(posts).toBe(16);

    // Healthy, the two due deliveries go out together and both fail (streak 1); from then on one
    // POST at a time, each no sooner than the last failure plus the curve at the streak.
    const { rows: attempts } = await testDb().query(
      `SELECT a.started_at FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 AND d.event_type <> 'webhook.test' ORDER BY a.started_at`,
      [endpointId],
    );
    const gaps = attempts.slice(1).map((a, i) => Math.round((a.started_at.getTime() - attempts[i].started_at.getTime()) / 60_000));
    expect(gaps.slice(0, 8)).toEqual([0, 1, 2, 4, 8, 16, 32, 60]);
    expect(gaps.slice(8)).toEqual(Array(7).fill(60));

    const { rows: alerts } = await testDb().query(
      `SELECT kind, payload->>'failure_streak' AS streak FROM notifications WHERE payload->>'endpoint_id' = $1 ORDER BY created_at`,
      [endpointId],
    );
    expect(alerts.map((a) => [a.kind, Number(a.streak)])).toEqual([
      ['endpoint_failing', 5],
      ['endpoint_failing', 10],
      ['endpoint_paused', 15],
    ]);
    expect((await handle.query(endpointStateQuery)).health).toBe('paused');
    await bed.settled(endpointId, 2, (d) => d.status === 'failed' && d.held_since !== null);

    // Paused: no POST, whatever arrives.
    await bed.publish(tenant, 3);
    await workflows.wake(endpointId, tenant.accountId);
    await bed.env.sleep('3 hours');
    expect(bed.posts('/fail/')).toHaveLength(16);

    // The contract's hold is 14 days from when each delivery was held: at the pause (the first two)
    // and at the wake that found the endpoint paused (the third).
    const held = await bed.settled(endpointId, 3, (d) => d.held_since !== null && d.status !== 'exhausted');
    const heldAt = held.map((d) => d.held_since!.getTime());
    const expiresAt = Math.min(...heldAt) + DAYS_14;
    // An hour before the first hold turns 14 days old, all three are still held.
    await bed.env.sleep(expiresAt - HOUR - (await bed.env.currentTimeMs()));
    const before = await bed.deliveries(endpointId);
    expect(before.map((d) => [d.status === 'exhausted', d.terminal_reason, d.held_since !== null])).toEqual(
      Array(3).fill([false, null, true]),
    );
    // An hour after the last hold turns 14 days old, all three ended as hold_expired.
    await bed.env.sleep(Math.max(...heldAt) + DAYS_14 + HOUR - (await bed.env.currentTimeMs()));
    await bed.settled(endpointId, 3, (d) => d.status === 'exhausted' && d.terminal_reason === 'hold_expired');
    await bed.recordHistory(endpointId, 'endpoint-fails-pauses-expires');
    // Real HTTP and Postgres work happens between the skipped hours; a loaded machine needs the room.
  }, 180_000);
});
