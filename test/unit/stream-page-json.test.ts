/** A stream page written as text around its items' stored data (src/api/presenters.ts streamPageJson) reads as JSON.stringify would write it. */
import { describe, expect, it } from 'vitest';
import { streamPageJson } from '../../src/api/presenters.js';
import type { StreamItem } from '../../src/db/events.js';

const item = (n: number, data: unknown, messageResourceId: string | null = null): StreamItem => ({
  id: `00000000-0000-7000-8000-00000000000${n}`,
  cursor: String(n),
  type: 'crm.demand.created',
  environment: 'live',
  message_id: null,
  external_id: n % 2 ? `ext-${n}` : null,
  message_resource_id: messageResourceId,
  occurred_at: new Date(Date.UTC(2026, 10, 27, 12, 0, n, 123)),
  created_at: new Date(Date.UTC(2026, 10, 27, 12, 0, n, 456)),
  dataJson: JSON.stringify(data),
});

/** What the route wrote before: the page as objects, through JSON.stringify. */
function asObjects(items: StreamItem[], paging: Record<string, unknown>): string {
  const data = items.map((i) => ({
    id: i.id,
    cursor: i.cursor,
    type: i.type,
    environment: i.environment,
    message_id: i.message_id,
    external_id: i.external_id,
    ...(i.message_resource_id ? { message_resource_id: i.message_resource_id } : {}),
    occurred_at: i.occurred_at.toISOString(),
    created_at: i.created_at.toISOString(),
    data: JSON.parse(i.dataJson),
  }));
  return JSON.stringify({ data, paging });
}

describe('streamPageJson', () => {
  const paging = { cursor: '3', next: '3', has_more: true };

  it('writes what JSON.stringify writes of the page, non-ASCII and a message resource included', () => {
    const items = [item(1, { a: 'café ☕ 🚀', 10: [1, { x: null }] }), item(2, {}, 'mr-2'), item(3, { big: 1e21, quote: 'say "hi"\n' })];
    const sent = streamPageJson(items, paging);
    expect(sent).toBe(asObjects(items, paging));
    expect(JSON.parse(sent).data[1].message_resource_id).toBe('mr-2');
  });

  it('writes an empty page as an empty list with its paging', () => {
    expect(streamPageJson([], { cursor: '0', next: null, has_more: false })).toBe(
      '{"data":[],"paging":{"cursor":"0","next":null,"has_more":false}}',
    );
  });
});
