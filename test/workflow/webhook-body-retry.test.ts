/**
 * A delivery's body is built from its stored event at each attempt (src/delivery/send-webhook.ts):
 * a retry two weeks later must sign and send the same bytes as the first attempt. Its own file
 * (and so its own time-skipping server) because it skips 14 days of the server's clock.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { getEvent } from '../../src/db/events.js';
import { eventBody } from '../../src/delivery/send-webhook.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { signBody, standardWebhookKey, standardWebhookSignature } from '../../src/security/signature.js';
import { createTenant, eventually, testDb } from '../support/harness.js';
import { deliveryTestBed, SECRET } from '../support/delivery-test-bed.js';

const bed = deliveryTestBed();
const DAY_S = 24 * 60 * 60;

describe('webhook body stability (time skipping)', () => {
  it('a retry 14 days after a failed attempt sends and signs the same bytes', async () => {
    const tenant = await createTenant();
    const prefix = `/retry/${crypto.randomUUID()}`;
    const endpointId = await bed.verifiedEndpoint(tenant, prefix);
    bed.receiver.reply({ status: 500, body: 'down' }, { status: 200, body: 'ok' });
    // Keys built out of jsonb's order, nested, and a payload long enough to be stored compressed.
    const def = getEventDefinition('crm.demand.created')!;
    const data = def.data.parse({
      entity_type: 'demand',
      entity_id: 'dem_retry',
      before_data: null,
      after_data: { title: 'Retry', status: 'open', id: 'dem_retry', version: 1, contact_id: 'c', description: 'ação '.repeat(200) },
      actor_user_id: null,
    });
    const stored = await storeEvent(testDb(), ingestEvent({ accountId: tenant.accountId, environment: 'live', def, data }));
    await bed.workflows().notify(endpointId, tenant.accountId, 'created');

    const [delivery] = await bed.settled(endpointId, 1, (d) => d.status === 'failed' && d.attempts === 1);
    // The next attempt, 14 days after the first instead of on the curve.
    await testDb().query(`UPDATE deliveries SET next_attempt_at = last_attempt_at + interval '14 days' WHERE id = $1`, [delivery!.id]);
    await bed.env.sleep('14 days');
    await bed.env.sleep('1 hour');
    await bed.settled(endpointId, 1, (d) => d.status === 'success' && d.attempts === 2);

    const [first, second] = await eventually(async () => {
      const posts = bed.posts(prefix);
      return posts.length === 2 ? posts : undefined;
    });
    expect(second!.body.equals(first!.body)).toBe(true);
    // What the stored event gives today is those bytes too.
    const event = (await getEvent(testDb(), tenant.accountId, stored.event.id))!;
    expect(eventBody(def, event).equals(first!.body)).toBe(true);
    expect(JSON.parse(first!.body.toString('utf8'))).toMatchObject({
      event: 'crm.demand.created',
      after_data: { description: 'ação '.repeat(200) },
    });

    // The body signature is the same; the Standard Webhooks one signs the same body with each attempt's own timestamp.
    const h = (r: typeof first, name: string) => String(r!.headers[name]);
    expect(h(second, 'x-webhook-signature')).toBe(h(first, 'x-webhook-signature'));
    expect(h(first, 'x-webhook-signature')).toBe(signBody(SECRET, first!.body));
    expect(h(second, 'webhook-id')).toBe(h(first, 'webhook-id'));
    const [t1, t2] = [Number(h(first, 'webhook-timestamp')), Number(h(second, 'webhook-timestamp'))];
    expect(t2 - t1).toBeGreaterThanOrEqual(14 * DAY_S);
    for (const [r, t] of [
      [first, t1],
      [second, t2],
    ] as const)
      expect(h(r, 'webhook-signature')).toBe(standardWebhookSignature(standardWebhookKey(SECRET), h(r, 'webhook-id'), t, first!.body));
  });
});
