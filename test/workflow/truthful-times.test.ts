/**
 * The audit list tells the truth about when a delivery goes next: on a failing endpoint (one
 * POST at a time on the curve) each delivery's reported next_attempt_at is compared with when
 * its POST actually happens, step after step, with the server's clock skipped between them.
 */
import { describe, expect, it } from 'vitest';
import { createTenant, testDb, type Tenant } from '../support/harness.js';
import { deliveryTestBed } from '../support/delivery-test-bed.js';

const bed = deliveryTestBed();

interface Reported {
  id: string;
  event_type: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  next_attempt_reason: string | null;
}

async function reported(tenant: Tenant, endpointId: string): Promise<Reported[]> {
  const res = await bed.api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${endpointId}&limit=100`, { key: tenant.key });
  expect(res.status).toBe(200);
  return (res.body.data as Reported[]).filter((d) => d.event_type !== 'webhook.test');
}

async function attemptsOf(endpointId: string): Promise<{ delivery_id: string; number: number; started_at: Date }[]> {
  const { rows } = await testDb().query(
    `SELECT a.delivery_id, a.number, a.started_at FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
     WHERE d.endpoint_id = $1 AND d.event_type <> 'webhook.test' ORDER BY a.started_at`,
    [endpointId],
  );
  return rows;
}

const at = (d: Reported) => new Date(d.next_attempt_at!).getTime();

/** Skips the server's clock to just past `ms` and waits for the endpoint's workflow to settle. */
async function skipTo(endpointId: string, ms: number) {
  const now = await bed.env.currentTimeMs();
  await bed.env.sleep(Math.max(0, ms - now) + 1_000);
  await bed.idle(endpointId);
}

describe('truthful next_attempt_at on a failing endpoint (time skipping)', () => {
  it('reports, for each step of the curve, when the next POST really happens; a resend says the endpoint’s next POST; a stopped endpoint says why it has none', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('truth'));
    bed.receiver.reply({ status: 500, body: 'down' });
    await bed.publish(tenant, 1);
    await bed.publish(tenant, 2);
    await bed.workflows().notify(endpointId, tenant.accountId, 'created');
    // Healthy, both go out together and fail: one failure of the streak.
    await bed.settled(endpointId, 2, (d) => d.status === 'failed' && d.attempts === 1);
    await bed.idle(endpointId);

    const curveMinutes = [1, 2, 4, 8, 16, 32];
    for (const [step, minutes] of curveMinutes.entries()) {
      const list = await reported(tenant, endpointId);
      expect(list).toHaveLength(2);
      const first = list.find((d) => d.next_attempt_reason !== 'endpoint_queue')!;
      const behind = list.find((d) => d !== first)!;
      // The one first in line goes at the endpoint's next POST: the last failure plus the curve at the streak.
      expect(first.next_attempt_reason, `step ${step}`).toBe('endpoint_pacing');
      expect(behind.next_attempt_reason, `step ${step}`).toBe('endpoint_queue');
      const ep = await bed.endpointRow(endpointId);
      expect(ep.failure_streak).toBe(step + 1);
      expect(at(first)).toBe(ep.last_failure_at.getTime() + minutes * 60_000);
      expect(at(behind)).toBeGreaterThanOrEqual(at(first));
      const before = (await attemptsOf(endpointId)).length;

      await skipTo(endpointId, at(first));
      const attempts = await attemptsOf(endpointId);
      // Exactly one POST, of the delivery said to be first, when it was said to be.
      expect(attempts).toHaveLength(before + 1);
      const made = attempts.at(-1)!;
      expect(made.delivery_id).toBe(first.id);
      expect(Math.abs(made.started_at.getTime() - at(first))).toBeLessThan(3_000);
      // None went before its reported time.
      for (const a of attempts.slice(before)) {
        const said = list.find((d) => d.id === a.delivery_id)!;
        expect(a.started_at.getTime()).toBeGreaterThanOrEqual(at(said) - 1_000);
      }
    }

    // A resend on a failing endpoint goes at the endpoint's next POST, not now.
    const queued = (await reported(tenant, endpointId)).find((d) => d.next_attempt_reason === 'endpoint_queue')!;
    const resent = await bed.api.request('POST', `/api/v1/webhook_deliveries/${queued.id}/resend`, { key: tenant.key });
    expect(resent.status).toBe(200);
    const ep = await bed.endpointRow(endpointId);
    const nextPost = ep.last_failure_at.getTime() + 60 * 60_000; // streak 7: 60 minutes
    expect(ep.failure_streak).toBe(7);
    expect(resent.body.data).toMatchObject({
      status: 'pending',
      next_attempt_reason: 'endpoint_pacing',
      next_attempt_at: new Date(nextPost).toISOString(),
    });
    const detail = await bed.api.request('GET', `/api/v1/webhook_deliveries/${queued.id}`, { key: tenant.key });
    expect(detail.body.data).toMatchObject({ next_attempt_at: new Date(nextPost).toISOString(), next_attempt_reason: 'endpoint_pacing' });
    await bed.idle(endpointId);
    const before = (await attemptsOf(endpointId)).length;
    await skipTo(endpointId, nextPost);
    const attempts = await attemptsOf(endpointId);
    expect(attempts).toHaveLength(before + 1);
    expect(attempts.at(-1)!.delivery_id).toBe(queued.id);
    expect(Math.abs(attempts.at(-1)!.started_at.getTime() - nextPost)).toBeLessThan(3_000);

    // Deactivated: no next attempt, and the reason says why.
    await bed.patch(tenant, endpointId, { active: false });
    for (const d of await reported(tenant, endpointId))
      expect(d).toMatchObject({ next_attempt_at: null, next_attempt_reason: 'endpoint_inactive' });

    // A 2xx test reactivates it, streak 0: what is still owed goes at its own retry time (no reason).
    bed.receiver.reply({ status: 200, body: 'ok' });
    await bed.test(tenant, endpointId);
    for (const d of await reported(tenant, endpointId)) if (d.status !== 'success') expect(d.next_attempt_reason).toBeNull();
    await skipTo(endpointId, (await bed.env.currentTimeMs()) + 60 * 60_000);
    await bed.settled(endpointId, 2, (d) => d.status === 'success');
    for (const d of await reported(tenant, endpointId)) expect(d).toMatchObject({ next_attempt_at: null, next_attempt_reason: null });
  }, 180_000);
});
