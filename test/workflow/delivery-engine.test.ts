/**
 * The delivery engine on the time-skipping test server: real activities, real Postgres, the
 * real API and a real local HTTPS receiver, with the retry curve's minutes and the 14-day hold
 * skipped. Endpoint states come from the API (create, 2xx test, PATCH), never from SQL.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HOLD_MS } from '../../src/core/health.js';
import { expireHeldDeliveries } from '../../src/db/deliveries.js';
import { endpointStateQuery } from '../../src/workflows/endpoint-contract.js';
import { createTenant, eventually, testDb } from '../support/harness.js';
import { deliveryTestBed, SECRET } from '../support/delivery-test-bed.js';
import { waitIdle } from '../support/temporal.js';

const bed = deliveryTestBed();
const signed = (secret: string, body: Buffer) => crypto.createHmac('sha256', secret).update(body).digest('hex');

describe('delivery engine (time skipping)', () => {
  it('delivers admitted events, signed, and records success', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('ok'));
    for (let n = 0; n < 30; n++) await bed.publish(tenant, n);
    await bed.workflows().wake(endpointId, tenant.accountId);
    await bed.settled(endpointId, 30, (d) => d.status === 'success');
    // The health verdict is written after the round that delivered them.
    await eventually(async () => {
      const row = await bed.endpointRow(endpointId);
      return row.last_response_code === 200 && row.next_attempt_at === null;
    });
    const mine = bed.posts('/ok/');
    expect(mine).toHaveLength(30);
    for (const r of mine) {
      expect(r.headers['x-webhook-signature']).toBe(signed(SECRET, r.body));
      expect(r.headers['x-webhook-event']).toBe('crm.demand.created');
      const body = JSON.parse(r.body.toString());
      expect(body).toMatchObject({ event: 'crm.demand.created', environment: 'live', customer_id: null, entity_type: 'demand' });
      expect(r.headers['x-idempotency-key']).toBe(`crm:demand:${body.entity_id}:1`);
    }
    expect(await bed.endpointRow(endpointId)).toMatchObject({
      health_status: 'healthy',
      failure_streak: 0,
      last_response_code: 200,
      next_attempt_at: null,
    });
    // Successes only: the session recorded them on the endpoint itself, and its workflow scheduled no recordHealth.
    const { rows } = await testDb().query(`SELECT last_success_at FROM endpoints WHERE id = $1`, [endpointId]);
    expect(rows[0].last_success_at).not.toBeNull();
    const scheduled = ((await bed.handle(endpointId).fetchHistory()).events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    expect(scheduled).toContain('deliverDue');
    expect(scheduled).not.toContain('recordHealth');
    await bed.recordHistory(endpointId, 'endpoint-delivers-a-batch');
    await bed.recordHistory(endpointId, 'endpoint-session-records-health');
  });

  it('a paused endpoint holds its backlog; a 2xx test through the API closes the circuit and the backlog drains', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('resume'));
    bed.receiver.reply({ status: 500, body: 'down' });
    await bed.publish(tenant, 1);
    await bed.publish(tenant, 2);
    await bed.workflows().wake(endpointId, tenant.accountId);
    for (let step = 0; step < 8 && (await bed.endpointRow(endpointId)).health_status !== 'paused'; step++) await bed.env.sleep('2 hours');
    expect(await bed.endpointRow(endpointId)).toMatchObject({ health_status: 'paused', failure_streak: 15, next_attempt_at: null });
    await bed.settled(endpointId, 2, (d) => d.held_since !== null);
    const posted = bed.posts('/resume/').length;
    await bed.env.sleep('3 hours');
    expect(bed.posts('/resume/')).toHaveLength(posted);

    bed.receiver.reply({ status: 200, body: 'ok' });
    expect((await bed.test(tenant, endpointId)).data).toEqual({
      success: true,
      response_code: 200,
      health_status: 'healthy',
      active: true,
    });
    await bed.settled(endpointId, 2, (d) => d.status === 'success' && d.held_since === null);
    expect(bed.posts('/resume/')).toHaveLength(posted + 2);
    await eventually(async () => {
      const row = await bed.endpointRow(endpointId);
      return row.health_status === 'healthy' && row.failure_streak === 0 && row.next_attempt_at === null;
    });
  });

  it('PATCH active:false holds what the endpoint had accepted and sends nothing; a 2xx test resumes it', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('inactive'));
    // A failing receiver keeps an accepted delivery owed (retrying on the curve).
    bed.receiver.reply({ status: 503 });
    await bed.publish(tenant, 1);
    await bed.workflows().wake(endpointId, tenant.accountId);
    await eventually(async () => (await bed.endpointRow(endpointId)).failure_streak === 1);

    const patched = await bed.patch(tenant, endpointId, { active: false });
    expect(patched).toMatchObject({ active: false, health_status: 'healthy', next_attempt_at: null });
    await bed.settled(endpointId, 1, (d) => d.status === 'failed' && d.held_since !== null);
    await bed.publish(tenant, 2); // not admitted: an inactive endpoint gets no new deliveries
    await bed.env.sleep('1 hour');
    expect(bed.posts('/inactive/')).toHaveLength(1);
    expect(await bed.deliveries(endpointId)).toHaveLength(1);
    expect((await bed.endpointRow(endpointId)).next_attempt_at).toBeNull();

    bed.receiver.reply({ status: 200 });
    await bed.test(tenant, endpointId);
    await bed.settled(endpointId, 1, (d) => d.status === 'success' && d.held_since === null && d.attempts === 2);
    expect(bed.posts('/inactive/')).toHaveLength(2);
  });

  it('a destination that now resolves inside the network fails as blocked_destination and counts in the streak', async () => {
    const tenant = await createTenant();
    const host = 'moving.receiver.test';
    bed.hosts[host] = ['127.0.0.1'];
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('blocked'), host);
    bed.hosts[host] = ['10.1.2.3']; // its DNS changes after the 2xx test
    await bed.publish(tenant, 1);
    await bed.workflows().wake(endpointId, tenant.accountId);
    await eventually(async () => (await bed.endpointRow(endpointId)).failure_streak === 1);
    const { rows } = await testDb().query(
      `SELECT a.error, a.response_code FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 AND d.event_type <> 'webhook.test'`,
      [endpointId],
    );
    expect(rows).toEqual([{ error: 'blocked_destination', response_code: null }]);
    expect((await bed.deliveries(endpointId))[0]).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('a workflow started by a wake-up alone (its creation signal was lost) reads the endpoint and delivers', async () => {
    const tenant = await createTenant();
    const id = await bed.verifiedEndpoint(tenant, bed.uniquePath('woken'));
    // Its workflow goes, as if its signals had been lost in a Temporal outage. Terminated only
    // when idle: the test server would keep time locked for an activity terminated under it.
    await bed.idle(id);
    await bed.handle(id).terminate('signals lost in a Temporal outage');
    await bed.publish(tenant, 1);
    await bed.workflows().wake(id, tenant.accountId);
    await bed.settled(id, 1, (d) => d.status === 'success');
    expect(bed.posts('/woken/')).toHaveLength(1);
  });

  it('a receiver blip while healthy costs one step of the streak, not a pause: the in-flight failures count once', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('blip'));
    await bed.idle(endpointId); // so one round claims the whole backlog
    // The first round's 16 concurrent POSTs fail, then the first two probes; the third gets through.
    bed.receiver.reply(...Array.from({ length: 18 }, () => ({ status: 503 })), { status: 200 });
    for (let n = 0; n < 50; n++) await bed.publish(tenant, n);
    await bed.workflows().wake(endpointId, tenant.accountId);
    await eventually(async () => (await bed.endpointRow(endpointId)).failure_streak === 1);
    // The round stopped dispatching at its first failure: only the POSTs already in flight were made.
    expect(bed.posts('/blip/')).toHaveLength(16);
    const failedFirst = (await bed.deliveries(endpointId)).filter((d) => d.status === 'failed');
    expect(failedFirst).toHaveLength(16);
    for (const d of failedFirst) expect(d.next_attempt_at!.getTime() - d.last_attempt_at!.getTime()).toBe(60_000);

    await bed.env.sleep('10 minutes');
    await bed.settled(endpointId, 50, (d) => d.status === 'success');
    expect(bed.posts('/blip/')).toHaveLength(50 + 18);
    expect(await bed.endpointRow(endpointId)).toMatchObject({ health_status: 'healthy', failure_streak: 0 });
    const { rows: alerts } = await testDb().query(`SELECT 1 FROM notifications WHERE payload->>'endpoint_id' = $1`, [endpointId]);
    expect(alerts).toHaveLength(0);
  });

  it('a failed test send stays as recorded: no release, hold, expiry or deletion changes it', async () => {
    const tenant = await createTenant();
    bed.receiver.reply({ status: 500, body: 'not yet' });
    const endpointId = await bed.createEndpoint(tenant, bed.uniquePath('testrow'));
    await bed.test(tenant, endpointId, 502);
    const testRow = async () =>
      (
        await testDb().query(
          `SELECT * FROM deliveries WHERE endpoint_id = $1 AND event_type = 'webhook.test' ORDER BY created_at LIMIT 1`,
          [endpointId],
        )
      ).rows[0];
    const recorded = await testRow();
    expect(recorded).toMatchObject({
      status: 'failed',
      attempts: 1,
      response_code: 500,
      terminal_reason: null,
      held_since: null,
      next_attempt_at: null,
    });

    bed.receiver.reply({ status: 200 });
    await bed.test(tenant, endpointId); // verified: the endpoint's backlog is released
    await bed.publish(tenant, 1);
    await bed.workflows().wake(endpointId, tenant.accountId);
    await bed.settled(endpointId, 1, (d) => d.status === 'success');
    await bed.patch(tenant, endpointId, { active: false }); // held
    await eventually(async () => (await bed.handle(endpointId).query(endpointStateQuery)).sending === false);
    // The expiry pass the workflow runs, 15 days on (skipping them here costs 360 hourly look-ups).
    await expireHeldDeliveries(testDb(), endpointId, new Date(Date.now() + 15 * 24 * 3600_000), HOLD_MS);
    expect((await bed.api.request('DELETE', `/api/v1/webhooks/${endpointId}`, { key: tenant.key })).status).toBe(204);
    await bed.handle(endpointId).result(); // the workflow closed the endpoint's open deliveries

    expect(await testRow()).toEqual(recorded);
  });

  it('next_attempt_at shows the next POST, and is null from the moment the endpoint stops sending', async () => {
    const tenant = await createTenant();
    const failing = async (prefix: string, event: number) => {
      bed.receiver.reply({ status: 200 });
      const id = await bed.verifiedEndpoint(tenant, bed.uniquePath(prefix));
      bed.receiver.reply({ status: 500 });
      await bed.publish(tenant, event);
      await bed.workflows().wake(id, tenant.accountId);
      const row = await eventually(async () => {
        const r = await bed.endpointRow(id);
        return r.failure_streak === 1 && r.next_attempt_at ? r : undefined;
      });
      // One failure: the next POST is no sooner than the last failure plus one minute.
      expect(row.next_attempt_at.getTime()).toBe(row.last_failure_at.getTime() + 60_000);
      return id;
    };

    const deactivated = await failing('next-inactive', 1);
    expect(await bed.patch(tenant, deactivated, { active: false })).toMatchObject({ next_attempt_at: null });
    await eventually(async () => (await bed.handle(deactivated).query(endpointStateQuery)).active === false);
    await bed.env.sleep('5 minutes');
    expect((await bed.endpointRow(deactivated)).next_attempt_at).toBeNull();

    const moved = await failing('next-moved', 2);
    const patched = await bed.patch(tenant, moved, { url: bed.receiver.url(bed.uniquePath('next-moved')) });
    expect(patched).toMatchObject({ health_status: 'unverified', next_attempt_at: null });
    await bed.env.sleep('5 minutes');
    expect((await bed.endpointRow(moved)).next_attempt_at).toBeNull();

    // A 2xx test resumes the backlog; once it is delivered there is no next attempt.
    bed.receiver.reply({ status: 200 });
    await bed.test(tenant, moved);
    await bed.settled(moved, 1, (d) => d.status === 'success');
    // The record of the success lands before the workflow records the endpoint's health: wait for the latter.
    await eventually(async () => {
      const row = await bed.endpointRow(moved);
      return row.failure_streak === 0 && row.next_attempt_at === null;
    });
    await waitIdle(bed.handle(moved));
    expect((await bed.endpointRow(moved)).next_attempt_at).toBeNull();
  });
});
