/**
 * The reference receiver (examples/receiver): signature and key checks, the key and the effect
 * in one transaction under duplicate and concurrent deliveries, and catch-up from the stream
 * through the real API from the cursor it saved.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { signatureFor, WebhookPlatform } from '@webhook-platform/sdk';
import {
  catchUp,
  createReceiverApp,
  ensureSchema,
  listen,
  savedCursor,
  storeEvent,
  type Effect,
} from '../../examples/receiver/receiver.js';
import { createTenant, startTestApi, type Tenant, type TestApi } from '../support/harness.js';
import { demandEvent, isolatedPool } from '../support/kit.js';

const SECRET = 'whsec_reference_receiver_secret';
let db: pg.Pool;
let failNext = false;
let receiver: Awaited<ReturnType<typeof listen>>;
let api: TestApi;
let tenant: Tenant;

// The example's effect, made to fail once on demand to show nothing is kept when it does.
const effect: Effect = async (tx, e) => {
  await storeEvent(tx, e);
  if (failNext) {
    failNext = false;
    throw new Error('effect failed');
  }
};

beforeAll(async () => {
  db = await isolatedPool();
  await ensureSchema(db);
  await ensureSchema(db); // idempotent: every start runs it
  receiver = await listen(createReceiverApp({ db, secrets: ['whsec_old_secret_value_1', SECRET], effect }), { port: 0 });
  [api, tenant] = await Promise.all([startTestApi(), createTenant()]);
});
afterAll(async () => {
  await receiver.close();
  await api.close();
  await db.end();
});

function deliver(key: string | undefined, body: string, signature = signatureFor(body, SECRET)) {
  return fetch(`http://127.0.0.1:${receiver.port}/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-webhook-event': 'crm.demand.created',
      'x-webhook-signature': signature,
      ...(key ? { 'x-idempotency-key': key } : {}),
    },
    body,
  });
}
const effects = async (key: string) =>
  (await db.query('SELECT source, event_type, payload FROM receiver_effects WHERE key = $1', [key])).rows;

describe('reference receiver', () => {
  const body = JSON.stringify({ event: 'crm.demand.created', environment: 'live', entity_id: 'dem_1' });

  it('answers 401 to a bad signature and 400 without X-Idempotency-Key, recording nothing', async () => {
    expect((await deliver('k-bad', body, signatureFor(body, 'whsec_some_other_secret'))).status).toBe(401);
    expect((await deliver('k-bad', JSON.stringify(JSON.parse(body), null, 1), signatureFor(body, SECRET))).status).toBe(401); // the signed bytes, re-serialized
    expect((await deliver(undefined, body)).status).toBe(400);
    expect(await effects('k-bad')).toEqual([]);
    expect((await db.query('SELECT count(*)::int AS n FROM receiver_processed')).rows[0].n).toBe(0);
  });

  it('20 concurrent deliveries of one key: all 2xx, one effect, the others answered as duplicates', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => deliver('k-concurrent', body)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const flags = await Promise.all(answers.map(async (a) => ((await a.json()) as { duplicate: boolean }).duplicate));
    expect(flags.filter((d) => !d)).toHaveLength(1);
    expect(await effects('k-concurrent')).toEqual([{ source: 'webhook', event_type: 'crm.demand.created', payload: JSON.parse(body) }]);

    // A later redelivery of the same key: 2xx, no second effect.
    const again = await deliver('k-concurrent', body);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(await effects('k-concurrent')).toHaveLength(1);
  });

  it('an effect that fails answers 5xx and keeps neither the key nor the effect, so the retry applies it once', async () => {
    failNext = true;
    expect((await deliver('k-retry', body)).status).toBe(500);
    expect(await effects('k-retry')).toEqual([]);
    expect((await deliver('k-retry', body)).status).toBe(200);
    expect(await effects('k-retry')).toHaveLength(1);
  });

  it('the old secret of a rotation is accepted too', async () => {
    expect((await deliver('k-rotated', body, signatureFor(body, 'whsec_old_secret_value_1'))).status).toBe(200);
  });

  it('catches up from the stream after an outage, from the cursor it saved, each item once', async () => {
    const client = new WebhookPlatform({ baseUrl: `${api.url}/api/v1`, apiKey: tenant.key });
    for (const n of [1, 2, 3]) expect((await client.events.publish(demandEvent(`catchup_${n}`))).created).toBe(true);
    const first = await catchUp({ db, client });
    expect(first.applied).toBe(3);
    expect(await savedCursor(db)).toBe(first.cursor);
    const { rows } = await db.query(
      `SELECT payload->>'cursor' AS cursor, event_type FROM receiver_effects WHERE source = 'stream' ORDER BY id`,
    );
    expect(rows.map((r) => r.cursor)).toEqual(['1', '2', '3']);

    // "Down" while two more events happen; the next start reads only those.
    for (const n of [4, 5]) await client.events.publish(demandEvent(`catchup_${n}`));
    expect(await catchUp({ db, client })).toEqual({ applied: 2, cursor: '5' });
    expect(await catchUp({ db, client })).toEqual({ applied: 0, cursor: '5' });

    // A cursor saved behind what was applied (a crash between the two) re-reads items without applying them twice.
    await db.query(`UPDATE receiver_stream_cursor SET cursor = '3'`);
    expect(await catchUp({ db, client })).toEqual({ applied: 0, cursor: '5' });
    expect((await db.query(`SELECT count(*)::int AS n FROM receiver_effects WHERE source = 'stream'`)).rows[0].n).toBe(5);
  });
});
