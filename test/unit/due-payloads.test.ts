import { describe, expect, it } from 'vitest';
import { duePayloads, parseDuePayload, type DueEndpoint } from '../../src/db/due-notifications.js';
import type { AccountId, EndpointId } from '../../src/core/ids.js';

const due = (n: number): DueEndpoint[] =>
  Array.from({ length: n }, (_, i) => ({
    endpointId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` as EndpointId,
    accountId: `11111111-0000-4000-8000-${String(i % 7).padStart(12, '0')}` as AccountId,
  }));

describe('due notification payloads', () => {
  it('name every endpoint once, a hundred to a notification, each within Postgres’ 8,000-byte payload', () => {
    const endpoints = due(250);
    const payloads = duePayloads(endpoints);
    expect(payloads).toHaveLength(3);
    for (const p of payloads) expect(Buffer.byteLength(p)).toBeLessThan(8000);
    expect(payloads.flatMap(parseDuePayload)).toEqual(endpoints);
  });

  it('read the one-endpoint form of the release before, and nothing from anything else on the channel', () => {
    const [one] = due(1);
    expect(parseDuePayload(`${one!.endpointId} ${one!.accountId}`)).toEqual([one]);
    expect(parseDuePayload(undefined)).toEqual([]);
    expect(parseDuePayload('')).toEqual([]);
    expect(parseDuePayload('hello')).toEqual([]);
    expect(parseDuePayload('a:,:b')).toEqual([]);
  });
});
