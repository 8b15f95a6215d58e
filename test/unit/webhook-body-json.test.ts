/**
 * A claimed event's body built around its stored payload JSON, unparsed, is byte for byte the body
 * built from the parsed payload; a payload that may hold an envelope key is left to the slow way.
 */
import { describe, expect, it } from 'vitest';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { inJsonbKeyOrder } from '../../src/core/jsonb-order.js';
import { webhookBody, webhookBodyJson, type EnvelopeFacts } from '../../src/core/webhook-body.js';

const def = (t: string) => getEventDefinition(t)!;
const facts = (type: string): Omit<EnvelopeFacts, 'data'> => ({
  type,
  customer_id: 'cus_1',
  environment: 'live',
  channel: 'chatapp',
  channel_account: { id: 'ca_1', channel: 'chatapp', display: '+1 555 0100' },
  external_id: 'wamid.1',
});
/** The payload's JSON as the store writes it (src/db/payload-bytes.ts). */
const stored = (data: Record<string, unknown>) => Buffer.from(JSON.stringify(inJsonbKeyOrder(data)), 'utf8');
/** What the body is from the parsed payload. */
const slow = (type: string, json: Buffer) =>
  Buffer.from(
    JSON.stringify(webhookBody(def(type), { ...facts(type), data: JSON.parse(json.toString('utf8')) as Record<string, unknown> })),
    'utf8',
  );

const payloads: Record<string, unknown>[] = [
  {},
  {
    entity_type: 'demand',
    entity_id: 't_1',
    before_data: null,
    after_data: { id: 't_1', version: 1, title: 'Bench' },
    actor_user_id: null,
  },
  { text: 'héllo "quoted" \\ back\nline ✓ 😀', n: -1.5e-7, big: 12345678901234, flags: [true, false, null], nested: { a: [{ b: 'c' }] } },
  // Integer-like keys, which a JS object orders before the rest.
  { z: 1, 10: 'ten', 2: 'two', a: { 3: 'x', b: 'y' } },
  // An envelope key's name inside a string is no key.
  { note: 'a "customer_id" here', quote: '"event"' },
];

describe('a webhook body around the stored payload JSON', () => {
  it.each(['crm.demand.created', 'chatapp.message.received', 'chatapp.account.updated'])(
    'is byte for byte the body from the parsed payload (%s)',
    (type) => {
      for (const data of payloads) {
        const json = stored(data);
        expect(webhookBodyJson(def(type), facts(type), json)?.toString('utf8')).toBe(slow(type, json).toString('utf8'));
      }
    },
  );

  it('leaves a payload holding an envelope key, at any depth, to the parsed way', () => {
    const type = 'chatapp.message.received';
    for (const json of [stored({ event: 'mine' }), stored({ x: { channel: 'inner' } }), Buffer.from('{"__proto__":{"a":1}}')]) {
      expect(webhookBodyJson(def(type), facts(type), json)).toBeUndefined();
    }
    // The slow way puts the envelope's value in the payload's place: why the splice must not run.
    expect(slow(type, stored({ event: 'mine', a: 1 })).toString('utf8')).toMatch(/^\{"a":1,"event":"chatapp.message.received"/);
  });
});
