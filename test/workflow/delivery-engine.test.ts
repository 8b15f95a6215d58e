/**
 * The delivery engine on the time-skipping test server: real activities, real Postgres and
 * a real local HTTPS receiver, with the retry curve's minutes and the 14-day hold skipped.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { endpointStateQuery } from '../../workflows/endpoint-contract.js';
import { createTenant, eventually, testDb } from '../support/harness.js';
import { deliveryTestBed, SECRET } from '../support/delivery-test-bed.js';

const bed = deliveryTestBed();

describe('delivery engine (time skipping)', () => {
  it('delivers admitted events, signed, and records success', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, `/ok/${crypto.randomUUID()}`);
    const workflows = bed.workflows();
    await workflows.notify(endpointId, tenant.accountId, 'created');
    for (let n = 0; n < 30; n++) await bed.publish(tenant, n);
    await workflows.wake(endpointId, tenant.accountId);
    await eventually(async () => (await bed.deliveries(endpointId)).every((d) => d.status === 'success'));
    // The health verdict is written after the round that delivered them.
    await eventually(async () => (await bed.endpointRow(endpointId)).last_response_code === 200);
    const mine = bed.receiver.received.filter((r) => r.path.startsWith('/ok/'));
    expect(mine).toHaveLength(30);
    for (const r of mine) {
      expect(r.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', SECRET).update(r.body).digest('hex'));
      expect(r.headers['x-webhook-event']).toBe('crm.demand.created');
      const body = JSON.parse(r.body.toString());
      expect(body).toMatchObject({ event: 'crm.demand.created', environment: 'live', customer_id: null, entity_type: 'demand' });
      expect(r.headers['x-idempotency-key']).toBe(`crm:demand:${body.entity_id}:1`);
    }
    expect(await bed.endpointRow(endpointId)).toMatchObject({ health_status: 'healthy', failure_streak: 0, last_response_code: 200, next_attempt_at: null });
    await bed.recordHistory(endpointId, 'endpoint-delivers-a-batch');
  });

  it('a 2xx test closes the circuit and the held backlog resumes', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, `/resume/${crypto.randomUUID()}`);
    await testDb().query(`UPDATE endpoints SET health_status = 'paused', failure_streak = 15, paused_at = now() WHERE id = $1`, [endpointId]);
    const workflows = bed.workflows();
    await workflows.notify(endpointId, tenant.accountId, 'created');
    await bed.publish(tenant, 1);
    await bed.publish(tenant, 2);
    await workflows.wake(endpointId, tenant.accountId);
    await bed.env.sleep('2 hours');
    expect((await bed.deliveries(endpointId)).every((d) => d.status === 'pending' && d.held_since !== null)).toBe(true);
    expect(bed.receiver.received.filter((r) => r.path.startsWith('/resume/'))).toHaveLength(0);

    // What the test route does on a 2xx.
    await testDb().query(`UPDATE endpoints SET health_status = 'healthy', failure_streak = 0, paused_at = NULL, verified_at = now() WHERE id = $1`, [endpointId]);
    await workflows.notify(endpointId, tenant.accountId, 'verified');
    await eventually(async () => (await bed.deliveries(endpointId)).every((d) => d.status === 'success'));
    expect(bed.receiver.received.filter((r) => r.path.startsWith('/resume/'))).toHaveLength(2);
  });

  it('a deactivated endpoint holds its backlog and sends nothing; a 2xx test resumes it', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('inactive'));
    const workflows = bed.workflows();
    await workflows.notify(endpointId, tenant.accountId, 'created');
    // What PATCH { active: false } commits before it signals.
    await testDb().query(`UPDATE endpoints SET active = false WHERE id = $1`, [endpointId]);
    await workflows.notify(endpointId, tenant.accountId, 'updated');
    await eventually(async () => (await bed.handle(endpointId).query(endpointStateQuery)).active === false);
    await bed.publish(tenant, 1); // not admitted: inactive endpoints get no new deliveries
    await testDb().query(
      `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, next_attempt_at)
       SELECT account_id, $1, id, type, idempotency_key, environment, 'pending', now() FROM events WHERE account_id = $2`,
      [endpointId, tenant.accountId],
    );
    await workflows.wake(endpointId, tenant.accountId);
    await eventually(async () => (await bed.deliveries(endpointId)).every((d) => d.held_since !== null));
    await bed.env.sleep('1 hour');
    expect(bed.receiver.received.filter((r) => r.path.startsWith('/inactive/'))).toHaveLength(0);

    await testDb().query(`UPDATE endpoints SET active = true, verified_at = now() WHERE id = $1`, [endpointId]);
    await workflows.notify(endpointId, tenant.accountId, 'verified');
    await eventually(async () => (await bed.deliveries(endpointId)).every((d) => d.status === 'success' && d.held_since === null));
    expect(bed.receiver.received.filter((r) => r.path.startsWith('/inactive/'))).toHaveLength(1);
  });

  it('a destination that now resolves inside the network fails as blocked_destination and counts in the streak', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('blocked'));
    await testDb().query(`UPDATE endpoints SET url = 'https://private.example/hooks' WHERE id = $1`, [endpointId]);
    await bed.publish(tenant, 1);
    await bed.workflows().notify(endpointId, tenant.accountId, 'created');
    await eventually(async () => (await bed.endpointRow(endpointId)).failure_streak === 1);
    const { rows } = await testDb().query(
      `SELECT a.error, a.response_code FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1`,
      [endpointId],
    );
    expect(rows).toEqual([{ error: 'blocked_destination', response_code: null }]);
    expect((await bed.deliveries(endpointId))[0]).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('a workflow started by a wake-up alone (its creation signal was lost) reads the endpoint and delivers', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('woken'));
    await bed.publish(tenant, 1);
    await bed.workflows().wake(endpointId, tenant.accountId);
    await eventually(async () => (await bed.deliveries(endpointId)).every((d) => d.status === 'success'));
    expect(bed.receiver.received.filter((r) => r.path.startsWith('/woken/'))).toHaveLength(1);
  });
});
