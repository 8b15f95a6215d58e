import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CATEGORIES } from '../../src/core/categories.js';
import {
  EVENT_TYPES,
  canonicalJson,
  eventJsonSchema,
  formatIssue,
  getEventDefinition,
  routesTo,
  sha256Hex,
  streamData,
  type EventDefinition,
} from '../../src/core/catalog/index.js';
import { CONTACT_ID, opportunityRow, receivedData, samples, stage, statusData, WAMID } from '../support/catalog-samples.js';

function def(type: string): EventDefinition {
  const d = getEventDefinition(type);
  if (!d) throw new Error(`no definition for ${type}`);
  return d;
}

/** Parses data and refs as the publish API does, then derives the key from the parsed values. */
function keyOf(type: string, data: Record<string, unknown>, refs: Record<string, unknown> = {}): string {
  const d = def(type);
  return d.idempotencyKey(d.data.parse(data), d.refs.parse(refs));
}

describe('catalog contents', () => {
  it('lists every type once, with SPEC 6.2 categories and DECISIONS channel events', () => {
    const types = EVENT_TYPES.map((d) => d.type);
    expect(new Set(types).size).toBe(types.length);
    expect(Object.fromEntries(EVENT_TYPES.map((d) => [d.type, d.category]))).toEqual({
      'chatapp.message.received': 'messages',
      'chatapp.message.sent': 'statuses',
      'chatapp.message.delivered': 'statuses',
      'chatapp.message.read': 'statuses',
      'chatapp.message.failed': 'statuses',
      'chatapp.message.echo': 'app_messages',
      'chatapp.message.edited': 'app_messages',
      'chatapp.message.revoked': 'app_messages',
      'chatapp.account.updated': 'account',
      'chatapp.phone_number.quality_updated': 'account',
      'chatapp.phone_number.connected': 'account',
      'crm.contact.stage_changed': 'crm',
      'crm.contact.consent_changed': 'messages',
      'crm.opportunity.created': 'crm',
      'crm.opportunity.updated': 'crm',
      'crm.demand.created': 'crm',
      'crm.demand.updated': 'crm',
      'crm.appointment_created': 'crm',
      'crm.appointment_updated': 'crm',
      'automation.journey_run.finished': 'statuses',
      'photoapp.message.received': 'messages',
      'webhook.test': null,
    });
    for (const d of EVENT_TYPES) {
      if (d.category !== null) expect(CATEGORIES).toContain(d.category);
      expect(d.description.length).toBeGreaterThan(10);
      expect(getEventDefinition(d.type)).toBe(d);
    }
    expect(getEventDefinition('chatapp.template.approved')).toBeUndefined();
    expect(Object.keys(samples).sort()).toEqual([...types].sort());
  });

  it('only webhook.test is out of the stream and not publishable', () => {
    expect(EVENT_TYPES.filter((d) => !d.inStream).map((d) => d.type)).toEqual(['webhook.test']);
    expect(EVENT_TYPES.filter((d) => !d.publishable).map((d) => d.type)).toEqual(['webhook.test']);
  });

  it('only the two received types count toward the free plan', () => {
    expect(
      EVENT_TYPES.filter((d) => d.countsTowardFreePlan)
        .map((d) => d.type)
        .sort(),
    ).toEqual(['chatapp.message.received', 'photoapp.message.received']);
  });

  it('account-health events and webhook.test carry no channel stamp; message events carry external_id', () => {
    expect(
      EVENT_TYPES.filter((d) => !d.channelStamped)
        .map((d) => d.type)
        .sort(),
    ).toEqual(['chatapp.account.updated', 'chatapp.phone_number.quality_updated', 'webhook.test']);
    expect(
      EVENT_TYPES.filter((d) => d.hasExternalId)
        .map((d) => d.type)
        .sort(),
    ).toEqual([
      'chatapp.message.delivered',
      'chatapp.message.echo',
      'chatapp.message.edited',
      'chatapp.message.failed',
      'chatapp.message.read',
      'chatapp.message.received',
      'chatapp.message.revoked',
      'chatapp.message.sent',
      'photoapp.message.received',
    ]);
    expect(def('photoapp.message.received').channel).toBe('photoapp');
    expect(def('chatapp.message.received').channel).toBe('chatapp');
    expect(def('crm.contact.consent_changed').channel).toBeNull();
  });

  it('every payload schema converts to JSON Schema', () => {
    for (const d of EVENT_TYPES) {
      const schema = eventJsonSchema(d) as { type?: string; properties?: Record<string, unknown> };
      expect(schema.type, d.type).toBe('object');
      expect(Object.keys(schema.properties ?? {}).length, d.type).toBeGreaterThan(0);
    }
    const failed = eventJsonSchema(def('chatapp.message.failed')) as { properties: Record<string, unknown>; required: string[] };
    expect(failed.properties['status']).toMatchObject({ const: 'failed' });
    expect(failed.required).not.toContain('conversation');
  });
});

describe('payload schemas', () => {
  for (const [type, sample] of Object.entries(samples)) {
    it(`${type}: accepts a realistic payload, rejects a broken one naming the field`, () => {
      const d = def(type);
      const ok = d.data.safeParse(sample.data);
      expect(ok.success, ok.success ? '' : formatIssue(ok.error, 'data')).toBe(true);
      expect(d.refs.safeParse(sample.refs ?? {}).success).toBe(true);

      const bad = d.data.safeParse(sample.broken.data);
      expect(bad.success).toBe(false);
      if (!bad.success) {
        expect(formatIssue(bad.error, 'data').startsWith(`data.${sample.broken.path}: `), formatIssue(bad.error, 'data')).toBe(true);
      }
    });
  }

  it('status payloads default missing nulls and keep conversation absent', () => {
    const parsed = def('chatapp.message.delivered').data.parse({ phone_number_id: '1', status: 'delivered', message_id: WAMID });
    expect(parsed).toEqual({
      phone_number_id: '1',
      status: 'delivered',
      message_id: WAMID,
      recipient_id: null,
      pricing: null,
      errors: null,
    });
    expect('conversation' in parsed).toBe(false);
  });

  it('keeps the raw provider objects passthrough', () => {
    const data = def('chatapp.message.failed').data.parse({
      ...statusData('failed'),
      pricing: { billable: false, pricing_model: 'PMP', category: 'marketing', type: 'free_entry_point', future_field: 1 },
      errors: [
        {
          code: 131026,
          title: 'Message undeliverable',
          href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
        },
      ],
    });
    expect(data['pricing']).toMatchObject({ future_field: 1 });
    expect((data['errors'] as Record<string, unknown>[])[0]).toMatchObject({ href: expect.any(String) });
    const received = def('chatapp.message.received').data.parse({
      ...receivedData,
      message: {
        ...receivedData.message,
        referral: { source_url: 'https://fb.me/abc', source_id: '120210', source_type: 'ad', headline: 'Promo', ctwa_clid: 'ARAkL' },
      },
    });
    expect((received['message'] as Record<string, unknown>)['text']).toEqual({ body: 'Oi, quero saber o preço' });
    expect((received['message'] as Record<string, unknown>)['referral']).toMatchObject({ ctwa_clid: 'ARAkL' });
  });

  it('consent evidence: up to 500 characters, empty when not given', () => {
    const d = def('crm.contact.consent_changed');
    const base = samples['crm.contact.consent_changed']!.data;
    expect(d.data.safeParse({ ...base, evidence: 'x'.repeat(500) }).success).toBe(true);
    const { evidence: _omit, ...noEvidence } = base;
    expect(d.data.parse(noEvidence)['evidence']).toBe('');
    expect(d.data.safeParse({ ...base, purpose: 'transactional' }).success).toBe(false);
    expect(d.data.safeParse({ ...base, origin: 'sms' }).success).toBe(false);
    expect(d.data.safeParse({ ...base, state: 'pending' }).success).toBe(false);
  });

  it('stage change: null fields omitted, one stage required, transaction ref required', () => {
    const d = def('crm.contact.stage_changed');
    const parsed = d.data.parse({
      contact: { id: CONTACT_ID, wa_id: '5511999998888', user_id: null, username: null },
      previous_stage: null,
      new_stage: stage('lead'),
      phone_number_id: null,
      changed_by: 'auto',
      occurred_at: '2026-11-22T10:00:00Z',
    });
    expect(parsed).toEqual({
      contact: { id: CONTACT_ID, wa_id: '5511999998888' },
      new_stage: stage('lead'),
      changed_by: 'auto',
      occurred_at: '2026-11-22T10:00:00Z',
    });
    const neither = d.data.safeParse({ contact: { id: CONTACT_ID }, changed_by: 'system', occurred_at: '2026-11-22T10:00:00Z' });
    expect(neither.success).toBe(false);
    const noRef = d.refs.safeParse({});
    expect(noRef.success).toBe(false);
    if (!noRef.success) expect(formatIssue(noRef.error, 'refs')).toMatch(/^refs\.transaction_id: /);
  });

  it('consent change needs refs.consent_record_id, webhook.test refs.endpoint_id', () => {
    expect(def('crm.contact.consent_changed').refs.safeParse({}).success).toBe(false);
    expect(def('webhook.test').refs.safeParse({}).success).toBe(false);
    expect(def('chatapp.message.received').refs.parse({})).toEqual({});
  });

  it('appointment_created drops null fields of the appointment', () => {
    const parsed = def('crm.appointment_created').data.parse(samples['crm.appointment_created']!.data);
    expect(parsed['appointment']).not.toHaveProperty('note');
  });

  it('opportunity: created has no before_data, after_data.id matches entity_id', () => {
    const d = def('crm.opportunity.created');
    expect(d.data.safeParse({ ...samples['crm.opportunity.created']!.data, before_data: opportunityRow(0) }).success).toBe(false);
    const mismatch = d.data.safeParse({ ...samples['crm.opportunity.created']!.data, entity_id: 'opp_02' });
    expect(mismatch.success).toBe(false);
    if (!mismatch.success) expect(formatIssue(mismatch.error, 'data')).toMatch(/^data\.after_data\.id: /);
  });

  it('quality update needs a number', () => {
    const d = def('chatapp.phone_number.quality_updated');
    const r = d.data.safeParse({ waba_id: '1', messaging_limit_tier: 'TIER_2K' });
    expect(r.success).toBe(false);
    expect(d.data.safeParse({ waba_id: '1', display_phone_number: '15550783881', messaging_limit_tier: 'TIER_2K' }).success).toBe(true);
    expect(d.data.safeParse({ waba_id: '1', display_phone_number: '15550783881', messaging_limit_tier: 'TIER_NOT_SET' }).success).toBe(
      false,
    );
  });

  it('timestamps: ISO with Z or offset; account occurred_at may be null', () => {
    const d = def('chatapp.account.updated');
    const base = samples['chatapp.account.updated']!.data;
    expect(d.data.safeParse({ ...base, occurred_at: '2026-11-22T07:00:00-03:00' }).success).toBe(true);
    expect(d.data.safeParse({ ...base, occurred_at: null }).success).toBe(true);
    expect(d.data.safeParse({ ...base, occurred_at: '22/11/2026' }).success).toBe(false);
    expect(
      def('chatapp.phone_number.connected').data.safeParse({ ...samples['chatapp.phone_number.connected']!.data, occurred_at: null })
        .success,
    ).toBe(false);
  });
});

describe('idempotency keys', () => {
  for (const [type, sample] of Object.entries(samples)) {
    if (!sample.key) continue;
    it(`${type} -> ${sample.key.slice(0, 60)}`, () => {
      expect(keyOf(type, sample.data, sample.refs)).toBe(sample.key);
    });
  }

  it('stage change writes none on either side of the arrow', () => {
    const base = { contact: { id: CONTACT_ID }, changed_by: 'manual', occurred_at: '2026-11-22T10:00:00Z' };
    const refs = { transaction_id: 'tx_9' };
    expect(keyOf('crm.contact.stage_changed', { ...base, new_stage: stage('lead') }, refs)).toBe(`crm:stage:${CONTACT_ID}:tx_9:none>lead`);
    expect(keyOf('crm.contact.stage_changed', { ...base, previous_stage: stage('won'), changed_by: 'system' }, refs)).toBe(
      `crm:stage:${CONTACT_ID}:tx_9:won>none`,
    );
    expect(keyOf('crm.contact.stage_changed', { ...base, previous_stage: null, new_stage: stage('lead') }, refs)).toBe(
      `crm:stage:${CONTACT_ID}:tx_9:none>lead`,
    );
  });

  it('account and quality keys are the prefix plus sha256 of the canonical payload, stable across key order', () => {
    const data = {
      waba_id: '102290129340398',
      account_event: 'ACCOUNT_RESTRICTION',
      ban_state: null,
      restrictions: [{ restriction_type: 'RESTRICTED_ADD_PHONE_NUMBER_ACTION', expiration: '2026-12-01T00:00:00.000Z' }],
      occurred_at: '2026-11-22T10:00:00.000Z',
    };
    const reordered = {
      occurred_at: data.occurred_at,
      restrictions: [{ expiration: '2026-12-01T00:00:00.000Z', restriction_type: 'RESTRICTED_ADD_PHONE_NUMBER_ACTION' }],
      ban_state: null,
      account_event: data.account_event,
      waba_id: data.waba_id,
    };
    const key = keyOf('chatapp.account.updated', data);
    expect(key).toBe(keyOf('chatapp.account.updated', reordered));
    const expected = createHash('sha256')
      .update(canonicalJson(def('chatapp.account.updated').data.parse(data)))
      .digest('hex');
    expect(key).toBe(`chatapp.account.updated:${expected}`);
    expect(key).toMatch(/^chatapp\.account\.updated:[0-9a-f]{64}$/);
    expect(keyOf('chatapp.account.updated', { ...data, occurred_at: '2026-11-22T10:05:00.000Z' })).not.toBe(key);

    const q = samples['chatapp.phone_number.quality_updated']!.data;
    const qKey = keyOf('chatapp.phone_number.quality_updated', q);
    expect(qKey).toMatch(/^chatapp\.phone_number\.quality_updated:[0-9a-f]{64}$/);
    expect(keyOf('chatapp.phone_number.quality_updated', Object.fromEntries(Object.entries(q).reverse()))).toBe(qKey);
  });

  it('phone number connected from the panel without a link uses none', () => {
    const data = { ...samples['chatapp.phone_number.connected']!.data, setup_link_id: null };
    expect(keyOf('chatapp.phone_number.connected', data)).toBe('chatapp.phone_number.connected:none:106540352242922');
  });

  it('webhook.test key is the same for every test of an endpoint', () => {
    const refs = { endpoint_id: 'ep_1' };
    expect(keyOf('webhook.test', { message: 'a', sent_at: '2026-11-22T10:00:00Z' }, refs)).toBe(
      keyOf('webhook.test', { message: 'b', sent_at: '2026-11-23T10:00:00Z' }, refs),
    );
  });

  it('a missing key part throws instead of producing a partial key', () => {
    expect(() => def('crm.contact.consent_changed').idempotencyKey({}, {})).toThrow(/consent_record_id/);
    expect(() => def('chatapp.message.sent').idempotencyKey({}, {})).toThrow(/message_id/);
  });
});

describe('canonicalJson / sha256Hex', () => {
  it('sorts keys recursively, no whitespace, arrays in order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x' } })).toBe('{"a":{"c":"x","d":[3,{"y":null,"z":true}]},"b":1}');
    expect(canonicalJson({ 10: 'a', 9: 'b', x: undefined })).toBe('{"10":"a","9":"b"}');
    expect(canonicalJson([undefined, 1])).toBe('[null,1]');
    expect(canonicalJson('é"')).toBe('"é\\""');
  });

  it('sha256Hex matches node:crypto', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('routesTo (SPEC 2.2)', () => {
  it('routes by category', () => {
    expect(routesTo(def('chatapp.message.received'), ['messages'])).toBe(true);
    expect(routesTo(def('chatapp.message.received'), ['statuses'])).toBe(false);
    expect(routesTo(def('chatapp.message.read'), ['statuses'])).toBe(true);
    expect(routesTo(def('crm.opportunity.updated'), ['crm'])).toBe(true);
    expect(routesTo(def('chatapp.account.updated'), ['messages', 'statuses', 'crm'])).toBe(false);
    expect(routesTo(def('chatapp.phone_number.connected'), ['account'])).toBe(true);
  });

  it('consent goes with messages, not crm', () => {
    expect(routesTo(def('crm.contact.consent_changed'), ['messages'])).toBe(true);
    expect(routesTo(def('crm.contact.consent_changed'), ['crm'])).toBe(false);
  });

  it('journey end goes with statuses, not crm', () => {
    expect(routesTo(def('automation.journey_run.finished'), ['statuses'])).toBe(true);
    expect(routesTo(def('automation.journey_run.finished'), ['crm'])).toBe(false);
  });

  it('app_messages is opt-in and never reaches an empty subscription', () => {
    for (const t of ['chatapp.message.echo', 'chatapp.message.edited', 'chatapp.message.revoked']) {
      expect(routesTo(def(t), ['messages', 'statuses', 'crm', 'account'])).toBe(false);
      expect(routesTo(def(t), ['app_messages'])).toBe(true);
      expect(routesTo(def(t), [])).toBe(false);
    }
  });

  it('webhook.test never routes', () => {
    expect(routesTo(def('webhook.test'), [...CATEGORIES])).toBe(false);
    expect(routesTo(def('webhook.test'), [])).toBe(false);
  });
});

describe('streamData (SPEC 2.4, 6.3)', () => {
  const ctx = { messageResourceId: 'msg_res_1', contactId: CONTACT_ID, conversationId: 'conv_1' };

  it('normalizes chatapp.message.received', () => {
    const data = def('chatapp.message.received').data.parse({
      ...receivedData,
      message: { ...receivedData.message, context: { from: '5511988887777', id: 'wamid.ctx' } },
    });
    expect(streamData(def('chatapp.message.received'), data, ctx)).toEqual({
      phone_number_id: '106540352242922',
      message: {
        id: WAMID,
        external_id: WAMID,
        resource_id: 'msg_res_1',
        conversation_id: 'conv_1',
        contact_id: CONTACT_ID,
        direction: 'inbound',
        type: 'text',
        status: 'received',
        content: { body: 'Oi, quero saber o preço' },
        context: { from: '5511988887777', id: 'wamid.ctx' },
        timestamp: '2025-11-22T10:00:00.000Z',
      },
      contact: {
        id: CONTACT_ID,
        wa_id: '5511999998888',
        user_id: null,
        username: null,
        phone: '5511999998888',
        profile_name: 'Maria Souza',
        metadata: { plan: 'gold' },
      },
    });
  });

  it('normalizes a button reply and keeps the ad referral; missing ctx gives nulls', () => {
    const data = {
      phone_number_id: '106540352242922',
      message: {
        id: WAMID,
        external_id: WAMID,
        from: '5511999998888',
        timestamp: 'garbage',
        type: 'button',
        button: { payload: 'CONFIRM', text: 'Confirmar' },
        referral: { source_url: 'https://fb.me/x', source_id: '1', source_type: 'ad', headline: 'h' },
      },
      contact: { wa_id: '5511999998888' },
    };
    const out = streamData(def('chatapp.message.received'), data, {});
    expect(out['message']).toMatchObject({
      resource_id: null,
      conversation_id: null,
      contact_id: null,
      type: 'button',
      content: { payload: 'CONFIRM', text: 'Confirmar' },
      context: null,
      timestamp: null,
      referral: { source_type: 'ad' },
    });
    expect(out['contact']).toEqual({ id: null, wa_id: '5511999998888' });
  });

  it('normalizes photoapp.message.received the same way', () => {
    const out = streamData(def('photoapp.message.received'), samples['photoapp.message.received']!.data, ctx);
    expect(out['message']).toMatchObject({
      id: 'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQx',
      direction: 'inbound',
      status: 'received',
      content: { body: 'Tem no tamanho M?' },
      contact_id: CONTACT_ID,
    });
    expect(out['contact']).toMatchObject({ id: CONTACT_ID, user_id: '6583920192837465' });
    expect(out['account_id']).toBe('17841400000000000');
  });

  it('omits null fields of status events', () => {
    const data = def('chatapp.message.read').data.parse({ phone_number_id: '1', status: 'read', message_id: WAMID });
    expect(streamData(def('chatapp.message.read'), data, ctx)).toEqual({ phone_number_id: '1', status: 'read', message_id: WAMID });
    const failed = def('chatapp.message.failed').data.parse(samples['chatapp.message.failed']!.data);
    expect(streamData(def('chatapp.message.failed'), failed, ctx)).toEqual({
      phone_number_id: '106540352242922',
      status: 'failed',
      message_id: WAMID,
      recipient_id: '5511999998888',
      errors: (failed as { errors: unknown }).errors,
    });
  });

  it('leaves every other type unchanged', () => {
    for (const type of [
      'crm.contact.stage_changed',
      'automation.journey_run.finished',
      'chatapp.account.updated',
      'chatapp.message.echo',
    ]) {
      const data = def(type).data.parse(samples[type]!.data);
      expect(streamData(def(type), data, ctx)).toEqual(data);
    }
    // journey end is in statuses but keeps its null stop_reason
    const run = def('automation.journey_run.finished').data.parse({
      ...samples['automation.journey_run.finished']!.data,
      status: 'completed',
      stop_reason: null,
    });
    expect(streamData(def('automation.journey_run.finished'), run, ctx)).toHaveProperty('stop_reason', null);
  });
});
