import type { EndpointId } from '../../src/core/ids.js';
import { describe, expect, it } from 'vitest';
import { admit, type RoutableEndpoint } from '../../src/core/admission.js';
import { getEventDefinition } from '../../src/core/catalog/index.js';
import { capApplies, judgeCount, usageMonth } from '../../src/core/free-plan.js';
import { parseStreamAfter, parseStreamLimit, streamPaging } from '../../src/core/stream-paging.js';
import { webhookBody } from '../../src/core/webhook-body.js';

const def = (t: string) => getEventDefinition(t)!;
const ep = (over: Partial<RoutableEndpoint>): RoutableEndpoint => ({
  id: 'e' as EndpointId,
  customer_id: null,
  events: ['messages'],
  active: true,
  health_status: 'healthy',
  ...over,
});

describe('admission (SPEC 2.2, 3.1)', () => {
  it('routes by category, consent with messages and journey end with statuses', () => {
    expect(admit(def('crm.contact.consent_changed'), null, [ep({ events: ['messages'] })])).toHaveLength(1);
    expect(admit(def('crm.contact.consent_changed'), null, [ep({ events: ['crm'] })])).toHaveLength(0);
    expect(admit(def('automation.journey_run.finished'), null, [ep({ events: ['statuses'] })])).toHaveLength(1);
    expect(admit(def('chatapp.message.echo'), null, [ep({ events: ['messages', 'statuses', 'crm', 'account'] })])).toHaveLength(0);
    expect(admit(def('chatapp.message.echo'), null, [ep({ events: ['app_messages'] })])).toHaveLength(1);
    expect(admit(def('chatapp.account.updated'), null, [ep({ events: ['messages'] })])).toHaveLength(0);
    expect(admit(def('webhook.test'), null, [ep({ events: ['messages', 'statuses', 'crm', 'account', 'app_messages'] })])).toHaveLength(0);
  });

  it('applies the Customer filter', () => {
    expect(admit(def('chatapp.message.received'), 'c1', [ep({ customer_id: 'c1' })])).toHaveLength(1);
    expect(admit(def('chatapp.message.received'), 'c2', [ep({ customer_id: 'c1' })])).toHaveLength(0);
    expect(admit(def('chatapp.message.received'), null, [ep({ customer_id: 'c1' })])).toHaveLength(0);
    expect(admit(def('chatapp.message.received'), 'c2', [ep({ customer_id: null })])).toHaveLength(1);
  });

  it('admits by active and health: inactive and unverified get nothing, paused holds', () => {
    const d = def('chatapp.message.received');
    expect(admit(d, null, [ep({ active: false })])).toEqual([]);
    expect(admit(d, null, [ep({ health_status: 'unverified' })])).toEqual([]);
    expect(admit(d, null, [ep({ health_status: 'degraded' })])).toEqual([{ endpointId: 'e', held: false }]);
    expect(admit(d, null, [ep({ health_status: 'paused' })])).toEqual([{ endpointId: 'e', held: true }]);
    expect(admit(d, null, [ep({ health_status: 'paused', active: false })])).toEqual([]);
  });
});

describe('free plan (SPEC 8)', () => {
  const at = (iso: string) => new Date(iso);
  it('follows rule 7 on the creation date', () => {
    expect(capApplies('free', at('2026-09-30T23:59:59Z'), at('2026-10-31T23:59:59Z'))).toBe(false);
    expect(capApplies('free', at('2026-09-30T23:59:59Z'), at('2026-11-01T00:00:00Z'))).toBe(true);
    expect(capApplies('free', at('2026-10-01T00:00:00Z'), at('2026-10-01T00:00:01Z'))).toBe(true);
    expect(capApplies('free', at('2026-10-15T00:00:00Z'), at('2026-10-20T00:00:00Z'))).toBe(true);
  });

  it('does not limit paid plans nor a trial in its 14 days', () => {
    expect(capApplies('paid', at('2026-01-01T00:00:00Z'), at('2026-12-01T00:00:00Z'))).toBe(false);
    expect(capApplies('trial', at('2026-11-10T00:00:00Z'), at('2026-11-23T23:59:59Z'))).toBe(false);
    expect(capApplies('trial', at('2026-11-10T00:00:00Z'), at('2026-11-24T00:00:00Z'))).toBe(true);
  });

  it('counts per UTC month and limits from the 301st', () => {
    expect(usageMonth(at('2026-11-30T23:59:59Z'))).toBe('2026-11-01');
    expect(usageMonth(at('2026-12-01T00:00:00Z'))).toBe('2026-12-01');
    expect(judgeCount(239)).toEqual({ limited: false, warning: null });
    expect(judgeCount(240)).toEqual({ limited: false, warning: 240 });
    expect(judgeCount(300)).toEqual({ limited: false, warning: 300 });
    expect(judgeCount(301)).toEqual({ limited: true, warning: null });
  });
});

describe('stream query rules (SPEC 6.5)', () => {
  it('after: non-negative integer or refused', () => {
    expect(parseStreamAfter(undefined)).toBe('0');
    expect(parseStreamAfter('0')).toBe('0');
    expect(parseStreamAfter('00042')).toBe('42');
    for (const bad of ['-1', '1.5', 'abc', '', ' 1', '1e3', '99999999999999999999']) expect(parseStreamAfter(bad)).toBeUndefined();
  });

  it('limit: default 20, cut to 100, invalid back to default', () => {
    expect(parseStreamLimit(undefined)).toBe(20);
    expect(parseStreamLimit('7')).toBe(7);
    expect(parseStreamLimit('1000')).toBe(100);
    expect(parseStreamLimit('0')).toBe(20);
    expect(parseStreamLimit('x')).toBe(20);
  });

  it('paging: cursor of the last item, or the given after on an empty page', () => {
    expect(streamPaging('5', ['6', '7'], true)).toEqual({ cursor: '7', next: '7', has_more: true });
    expect(streamPaging('5', ['6', '7'], false)).toEqual({ cursor: '7', next: null, has_more: false });
    expect(streamPaging('9', [], false)).toEqual({ cursor: '9', next: null, has_more: false });
  });
});

describe('webhook body envelope (SPEC 2.3)', () => {
  const ca = { id: 'ca1', channel: 'chatapp', display: '+1 555' };
  it('stamps channel events and leaves account-health events unstamped', () => {
    const received = webhookBody(def('chatapp.message.received'), {
      type: 'chatapp.message.received',
      customer_id: 'c',
      environment: 'sandbox',
      channel: 'chatapp',
      channel_account: ca,
      external_id: 'wamid.1',
      data: { phone_number_id: 'p' },
    });
    expect(received).toEqual({
      event: 'chatapp.message.received',
      customer_id: 'c',
      environment: 'sandbox',
      channel: 'chatapp',
      channel_account: ca,
      external_id: 'wamid.1',
      phone_number_id: 'p',
    });
    const health = webhookBody(def('chatapp.account.updated'), {
      type: 'chatapp.account.updated',
      customer_id: 'c',
      environment: 'live',
      channel: 'chatapp',
      channel_account: ca,
      external_id: null,
      data: { waba_id: 'w' },
    });
    expect(health).toEqual({ event: 'chatapp.account.updated', customer_id: 'c', environment: 'live', waba_id: 'w' });
    const crm = webhookBody(def('crm.demand.created'), {
      type: 'crm.demand.created',
      customer_id: null,
      environment: 'live',
      channel: null,
      channel_account: null,
      external_id: null,
      data: { entity_type: 'demand' },
    });
    expect(crm).toEqual({ event: 'crm.demand.created', customer_id: null, environment: 'live', entity_type: 'demand' });
  });

  it('the envelope wins over a payload field of the same name', () => {
    const body = webhookBody(def('crm.demand.created'), {
      type: 'crm.demand.created',
      customer_id: null,
      environment: 'live',
      channel: null,
      channel_account: null,
      external_id: null,
      data: { event: 'spoofed' },
    });
    expect(body.event).toBe('crm.demand.created');
  });
});
