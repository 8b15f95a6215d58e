/**
 * The one path of status events (storeMessageStatus) under races between processes: two pools
 * stand in for two API processes; with two connections each, status-lock holders could take
 * every connection if nothing kept room for their stores.
 */
import crypto from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { dueChannel } from '../../src/db/due-notifications.js';
import { registerOutboundMessage, type MessageRow } from '../../src/db/messaging.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { createDueWakes } from '../../src/events/due-wakes.js';
import { storeMessageStatus } from '../../src/events/message-statuses.js';
import { ingestEvent } from '../../src/events/store-event.js';
import { createTenant, TASK_QUEUE_PREFIX, testDb } from '../support/harness.js';

const pools: Db[] = [];
afterAll(() => Promise.all(pools.map((p) => p.end())));

function statusOf(db: Db, accountId: string, ca: { id: string; channel: 'chatapp'; display: string }, m: MessageRow, status: string) {
  const def = getEventDefinition(`chatapp.message.${status}`)!;
  const data = def.data.parse({
    phone_number_id: 'pn',
    status,
    message_id: m.external_id,
    recipient_id: null,
    pricing: null,
    errors: null,
  });
  const deps = { db, wakes: createDueWakes(db, dueChannel(`${TASK_QUEUE_PREFIX}-unpolled`)) };
  const event = ingestEvent({
    accountId,
    environment: 'live',
    def,
    data,
    channelAccount: ca,
    externalId: m.external_id,
    messageResourceId: m.id,
  });
  return storeMessageStatus(deps, m, null, event);
}

async function registeredMessages(n: number) {
  const tenant = await createTenant();
  const ca = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    channel: 'chatapp',
    display: 'racing',
    phoneNumberId: `pn${crypto.randomBytes(5).toString('hex')}`,
  });
  const messages: MessageRow[] = [];
  for (let i = 0; i < n; i++) {
    messages.push(
      await registerOutboundMessage(testDb(), {
        accountId: tenant.accountId,
        channelAccountId: ca.id,
        externalId: `wamid.race.${crypto.randomUUID()}`,
        status: 'sent',
      }),
    );
  }
  return { accountId: tenant.accountId, origin: { id: ca.id, channel: 'chatapp' as const, display: ca.display }, messages };
}

/** Every status of every message through every pool at once; then each message's events in stream order. */
async function race(poolSize: number) {
  const { accountId, origin, messages } = await registeredMessages(12);
  const dbs = [createPool(inject('databaseUrl'), poolSize), createPool(inject('databaseUrl'), poolSize)];
  pools.push(...dbs);
  await Promise.all(
    messages.flatMap((m) =>
      ['read', 'delivered', 'read', 'delivered'].flatMap((status) => dbs.map((db) => statusOf(db, accountId, origin, m, status))),
    ),
  );
  const { rows } = await testDb().query<{ message_resource_id: string; type: string }>(
    `SELECT message_resource_id, type FROM events WHERE account_id = $1 ORDER BY cursor`,
    [accountId],
  );
  const statuses = await testDb().query<{ id: string; status: string }>(`SELECT id, status FROM messages WHERE id = ANY($1::uuid[])`, [
    messages.map((m) => m.id),
  ]);
  return messages.map((m) => ({
    seen: rows.filter((r) => r.message_resource_id === m.id).map((r) => r.type),
    status: statuses.rows.find((r) => r.id === m.id)!.status,
  }));
}

// read may win the race (delivered then emits nothing) or lose it; never delivered after read, never twice.
const FORWARD = [['chatapp.message.read'], ['chatapp.message.delivered', 'chatapp.message.read']];

describe('statuses of one message from two processes at once', () => {
  it('never show delivered after read in the stream, and emit each status at most once', async () => {
    for (const { seen, status } of await race(8)) {
      expect(FORWARD).toContainEqual(seen);
      expect(status).toBe('read');
    }
  });

  it('all finish through pools of two connections: holders of the status lock leave room for their stores', async () => {
    for (const { seen, status } of await race(2)) {
      expect(FORWARD).toContainEqual(seen);
      expect(status).toBe('read');
    }
  });
});

describe('a status of a message deleted after it was found', () => {
  it('stores no event and reports the message gone', async () => {
    const { accountId, origin, messages } = await registeredMessages(1);
    const m = messages[0]!;
    await testDb().query(`DELETE FROM messages WHERE id = $1`, [m.id]);
    expect(await statusOf(testDb(), accountId, origin, m, 'read')).toEqual({ gone: true });
    const { rows } = await testDb().query(`SELECT 1 FROM events WHERE account_id = $1`, [accountId]);
    expect(rows).toEqual([]);
  });
});
