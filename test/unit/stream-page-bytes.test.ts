/** A stream page written as bytes around its items' stored data (src/api/presenters.ts streamPageBytes) reads as JSON.stringify would write it. */
import { describe, expect, it } from 'vitest';
import { streamPageBytes } from '../../src/api/presenters.js';
import type { StreamItem } from '../../src/db/events.js';

const item = (n: number, data: unknown, messageResourceId: string | null = null): StreamItem => ({
  id: `00000000-0000-7000-8000-00000000000${n}`,
  cursor: String(n),
  type: 'crm.demand.created',
  environment: 'live',
  message_id: null,
  external_id: n % 2 ? `ext-${n}` : null,
  message_resource_id: messageResourceId,
  occurred_at: new Date(Date.UTC(2026, 10, 27, 12, 0, n, 123)).toISOString(),
  created_at: new Date(Date.UTC(2026, 10, 27, 12, 0, n, 456)).toISOString(),
  dataJson: Buffer.from(JSON.stringify(data), 'utf8'),
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
    occurred_at: i.occurred_at,
    created_at: i.created_at,
    data: JSON.parse(i.dataJson.toString('utf8')),
  }));
  return JSON.stringify({ data, paging });
}

describe('streamPageBytes', () => {
  const paging = { cursor: '3', next: '3', has_more: true };

  it('writes what JSON.stringify writes of the page, non-ASCII, quotes and a message resource included', () => {
    const quoted = Object.assign(item(4, { n: 4 }, 'mr "4"\\'), { message_id: 'wamid.\u0001"x"', external_id: 'ext "é"\n' });
    const items = [
      item(1, { a: 'café ☕ 🚀', 10: [1, { x: null }] }),
      item(2, {}, 'mr-2'),
      item(3, { big: 1e21, quote: 'say "hi"\n' }),
      quoted,
    ];
    const sent = streamPageBytes(items, paging).toString('utf8');
    expect(sent).toBe(asObjects(items, paging));
    expect(JSON.parse(sent).data[1].message_resource_id).toBe('mr-2');
  });

  it('writes an empty page as an empty list with its paging', () => {
    expect(streamPageBytes([], { cursor: '0', next: null, has_more: false }).toString('utf8')).toBe(
      '{"data":[],"paging":{"cursor":"0","next":null,"has_more":false}}',
    );
  });
});
