/**
 * A delivery session whose lanes wait for their endpoint's share of an origin: each lane takes its
 * share before it reads and signs, so a PATCH committed while it waited (longer than a slow POST)
 * applies to its POST; and a session that ends stops its waiting lanes and gives their deliveries
 * back.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SLOW_POST_MS } from '../../src/core/fair-share.js';
import { eventually, testDb } from '../support/harness.js';
import { sessionTestBed } from '../support/session-test-bed.js';

/** One connection per origin: a session's second lane waits for the first one's POST to end. */
const bed = sessionTestBed('shares', { maxConnectionsPerOrigin: 1 });

const hmac = (secret: string, body: Buffer) => crypto.createHmac('sha256', secret).update(body).digest('hex');

/** One session of three lanes, as the worker runs it, on the one-connection client. */
const session = (endpointId: string, maxSessionMs: number) => bed.session(endpointId, { concurrency: 3, maxSessionMs });

describe('delivery sessions waiting for a share of an origin', () => {
  it('sign with the secret committed while they waited, and send what they hold once the session is idle', async () => {
    const [oldSecret, newSecret] = ['whsec_share_wait_old_0001', 'whsec_share_wait_new_0002'];
    const e = await bed.endpointWithBacklog(3, oldSecret);
    let answer!: () => void;
    bed.receiver.replyOn(e.prefix, { status: 200, hold: new Promise<void>((r) => (answer = r)) });
    const running = session(e.id, 30_000);
    // The first lane's POST is held; the other two lanes wait for the endpoint's one connection.
    await eventually(async () => e.posts().length === 1);
    const patched = await bed.api.request('PATCH', `/api/v1/webhooks/${e.id}`, { key: bed.tenant.key, body: { secret: newSecret } });
    expect(patched.status).toBe(200);
    // Their wait outlasts a slow POST: a shorter one keeps the endpoint read before it.
    await new Promise((r) => setTimeout(r, SLOW_POST_MS + 20));
    answer();
    // The first lane then finds nothing more to claim (idle): the two waiting lanes still send theirs.
    const round = await running;
    expect(round.posts).toBe(3);
    const [first, ...later] = e.posts();
    expect(first!.headers['x-webhook-signature']).toBe(hmac(oldSecret, first!.body));
    expect(later).toHaveLength(2);
    for (const p of later) expect(p.headers['x-webhook-signature']).toBe(hmac(newSecret, p.body));
  });

  it('stop waiting when the session ends, and give their deliveries back', async () => {
    const e = await bed.endpointWithBacklog(3, 'whsec_share_wait_time_0003');
    // 600 ms a POST, one at a time: the third would start past the session's 1 s, which no lane
    // checks while it waits for a share (the first finds nothing more to claim: the session is idle).
    bed.receiver.replyOn(e.prefix, { status: 200, delayMs: 600 });
    const round = await session(e.id, 1_000);
    expect(round.posts).toBeLessThan(3);
    expect(round.more).toBe(true);
    expect(e.posts()).toHaveLength(round.posts!);
    const { rows } = await testDb().query<{ status: string; leased: boolean }>(
      `SELECT status, leased_until IS NOT NULL AS leased FROM deliveries WHERE endpoint_id = $1`,
      [e.id],
    );
    expect(rows.filter((r) => r.status === 'success')).toHaveLength(round.posts!);
    expect(rows.filter((r) => r.status === 'pending' && !r.leased)).toHaveLength(3 - round.posts!);
    expect(round.nextDueAtMs).toBeLessThanOrEqual(Date.now());
  });
});
