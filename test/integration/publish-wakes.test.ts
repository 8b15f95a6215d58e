/**
 * A lone publish wakes its endpoints with its own commit: its append statement notifies the
 * workers' channel (`DueWakes.claimInline`), so no statement of its own follows. A publish within
 * the window after it wakes them as before, in the coalesced statement at the window's end.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AccountId } from '../../src/core/ids.js';
import { parseDuePayload } from '../../src/db/due-notifications.js';
import { wakeFor } from '../../src/events/deps.js';
import { createDueWakes } from '../../src/events/due-wakes.js';
import { storeEvent } from '../../src/events/store-event.js';
import { createTenant, demandEvent, eventually, testDb } from '../support/harness.js';
import { beforeEachQuery } from '../support/hooked-pool.js';

const channel = `wakes_test_${crypto.randomUUID().replaceAll('-', '')}`;
const heard: string[] = [];
let listener: pg.Client;

beforeAll(async () => {
  listener = new pg.Client({ connectionString: inject('databaseUrl') });
  await listener.connect();
  listener.on('notification', (n) => heard.push(...parseDuePayload(n.payload).map((d) => d.endpointId)));
  await listener.query(`LISTEN ${channel}`);
});
afterAll(async () => {
  await listener.end();
});

describe('a publish’s wake', () => {
  it('of a lone publish goes with its commit, in its own statement; one within the window after it goes in the wakes’ statement', async () => {
    const t = await createTenant();
    const { rows } = await testDb().query<{ id: string }>(
      `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status) VALUES ($1, 'https://public.example/w', '{crm}', '\\x00', 'healthy') RETURNING id`,
      [t.accountId],
    );
    const endpointId = rows[0]!.id;
    // The wakes' own statements, counted: the lone publish must not need one.
    let wakeStatements = 0;
    const wakes = createDueWakes(
      beforeEachQuery(async () => wakeStatements++),
      channel,
      60_000, // a window that outlasts the test: only flush() ends it
    );

    const lone = await storeEvent(testDb(), demandEvent(t.accountId, 'lone'), new Date(), { wakes });
    expect(lone.woken).toBe(true);
    wakeFor({ db: testDb(), wakes }, t.accountId as AccountId, lone);
    await eventually(async () => heard.length >= 1);
    expect(heard).toEqual([endpointId]);
    expect(wakeStatements).toBe(0);

    // Within the window: the append notifies nothing, and the wake waits for the window's end.
    const next = await storeEvent(testDb(), demandEvent(t.accountId, 'next'), new Date(), { wakes });
    expect(next.woken).toBe(false);
    wakeFor({ db: testDb(), wakes }, t.accountId as AccountId, next);
    await wakes.flush();
    expect(wakeStatements).toBe(1);
    await eventually(async () => heard.length >= 2);
    expect(heard).toEqual([endpointId, endpointId]);
  });
});
