/**
 * Each event's payload is stored once (migration 0031): the stream item's data is derived from it
 * when read. For every catalog type, stream items, publish answers and webhook bodies must read
 * byte for byte as they did when the payload and the item's data were two jsonb columns.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { presentStreamItem, streamPageBytes } from '../../src/api/presenters.js';
import { EVENT_TYPES, streamData, type EventDefinition } from '../../src/core/catalog/index.js';
import { getEvent, readStream, type EventRow } from '../../src/db/events.js';
import { eventBody } from '../../src/delivery/send-webhook.js';
import { ingestEvent, storeEvent } from '../../src/events/store-event.js';
import { samples } from '../support/catalog-samples.js';
import { createTenant, testDb } from '../support/harness.js';

/** The payload and the stream copy as the two jsonb columns gave them back (keys in jsonb's order). */
async function asJsonbColumns(
  data: unknown,
  streamCopy: unknown,
): Promise<{ data: Record<string, unknown>; stream_data: Record<string, unknown> }> {
  const { rows } = await testDb().query(`SELECT $1::jsonb AS data, $2::jsonb AS stream_data`, [
    JSON.stringify(data),
    JSON.stringify(streamCopy),
  ]);
  return rows[0];
}

const PAGING = { cursor: '1', next: null, has_more: false };

const ids = () => ({ messageResourceId: crypto.randomUUID(), contactId: crypto.randomUUID(), conversationId: crypto.randomUUID() });

function parsed(def: EventDefinition) {
  const sample = samples[def.type]!;
  return { data: def.data.parse(sample.data), refs: def.refs.parse(sample.refs ?? {}) };
}

describe('each payload stored once', () => {
  it('has a sample of every catalog type', () => {
    expect(EVENT_TYPES.filter((d) => !samples[d.type]).map((d) => d.type)).toEqual([]);
  });

  it.each(EVENT_TYPES.map((d) => [d.type, d] as const))(
    '%s: the publish answer, the stream item and the webhook body are what the two copies gave',
    async (_type, def) => {
      const t = await createTenant();
      const { data, refs } = parsed(def);
      const ctx = ids();
      const stored = await storeEvent(
        testDb(),
        ingestEvent({
          accountId: t.accountId,
          environment: 'live',
          def,
          data,
          refs,
          externalId: 'ext-1',
          messageResourceId: ctx.messageResourceId,
          contactRef: ctx.contactId,
          streamContext: { contactId: ctx.contactId, conversationId: ctx.conversationId },
        }),
      );
      expect(stored.created).toBe(true);
      // What the stream item's data was built as and stored from, before 0031.
      const before = streamData(def, data, ctx);

      // The publish answer is built from what was given, as before (no read back).
      const answered: EventRow = { ...stored.event, stream_data: before };
      expect(JSON.stringify(presentStreamItem(stored.event))).toBe(JSON.stringify(presentStreamItem(answered)));

      // Read back: the stream page and the single event, against the two columns' values.
      const row = (await getEvent(testDb(), t.accountId, stored.event.id))!;
      const page = await readStream(testDb(), t.accountId, 'live', '0', 10);
      expect(page.rows.map((r) => r.id)).toEqual([row.id]);
      const columns = await asJsonbColumns(data, before);
      const old: EventRow = { ...row, ...columns };
      expect(JSON.stringify(presentStreamItem(row))).toBe(JSON.stringify(presentStreamItem(old)));
      expect(eventBody(def, row).equals(eventBody(def, old))).toBe(true);
      expect(streamPageBytes(page.rows, PAGING).toString('utf8')).toBe(JSON.stringify({ data: [presentStreamItem(old)], paging: PAGING }));

      // One copy: the row keeps no stream copy, and the ids only a received message's item needs.
      const { rows } = await testDb().query(`SELECT stream_data, contact_id, conversation_id FROM events WHERE id = $1`, [row.id]);
      const received = def.type.endsWith('.message.received');
      expect(rows[0]).toEqual({
        stream_data: null,
        contact_id: received ? ctx.contactId : null,
        conversation_id: received ? ctx.conversationId : null,
      });
    },
  );

  it('a stream page sends a compressed payload as stored: the text the jsonb columns gave, byte for byte', async () => {
    const t = await createTenant();
    const def = EVENT_TYPES.find((d) => d.type === 'crm.demand.created')!;
    // Keys jsonb orders by length and V8 puts first when integer-like, text past ASCII, numbers that
    // JSON writes in exponent form, nested arrays of objects, and enough of it (~1 KiB) to compress.
    const data = def.data.parse({
      entity_type: 'demand',
      entity_id: 'dem_1',
      before_data: null,
      after_data: {
        id: 'dem_1',
        version: 1,
        status: 'open',
        contact_id: 'c_1',
        10: 'ten',
        2: 'two',
        zz: 'later',
        é: 'accent',
        emoji: 'café ☕ 🚀',
        big: 1e21,
        small: 5e-7,
        nested: [{ b: 1, a: [2, { y: null, x: true }] }, []],
        description: 'x'.repeat(900),
      },
      actor_user_id: null,
    });
    const stored = await storeEvent(testDb(), ingestEvent({ accountId: t.accountId, environment: 'live', def, data }));
    const { rows } = await testDb().query<{ payload: Buffer }>(`SELECT payload FROM events WHERE id = $1`, [stored.event.id]);
    expect(rows[0]!.payload[0]).not.toBe('{'.charCodeAt(0));
    const row = (await getEvent(testDb(), t.accountId, stored.event.id))!;
    const old: EventRow = { ...row, ...(await asJsonbColumns(data, streamData(def, data, {}))) };
    const page = await readStream(testDb(), t.accountId, 'live', '0', 10);
    const sent = streamPageBytes(page.rows, PAGING).toString('utf8');
    expect(sent).toBe(JSON.stringify({ data: [presentStreamItem(old)], paging: PAGING }));
    expect(sent).toBe(JSON.stringify({ data: [presentStreamItem(row)], paging: PAGING }));
  });

  it('a received message published without platform ids reads with nulls in their place, as before', async () => {
    const t = await createTenant();
    const def = EVENT_TYPES.find((d) => d.type === 'chatapp.message.received')!;
    const { data, refs } = parsed(def);
    const stored = await storeEvent(testDb(), ingestEvent({ accountId: t.accountId, environment: 'live', def, data, refs }));
    const row = (await getEvent(testDb(), t.accountId, stored.event.id))!;
    const old: EventRow = { ...row, ...(await asJsonbColumns(data, streamData(def, data, {}))) };
    expect(JSON.stringify(presentStreamItem(row))).toBe(JSON.stringify(presentStreamItem(old)));
    expect((row.stream_data.message as Record<string, unknown>).conversation_id).toBeNull();
  });
});
