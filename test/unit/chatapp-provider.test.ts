import { describe, expect, it } from 'vitest';
import { formatIssue, getEventDefinition, type EventDefinition } from '../../src/core/catalog/index.js';
import { freeEntryPointEndOf } from '../../src/core/message-status.js';
import {
  ProviderPayloadError,
  echoPayload,
  editedPayload,
  factEventType,
  mapChatappWebhook,
  receivedPayload,
  revokedPayload,
  statusPayload,
  type ProviderFact,
} from '../../src/channels/inbound/chatapp-facts.js';

const WABA = '102290129340398';
const PNID = '106540352242922';
const DISPLAY = '15550783881';
const T = '1795341600'; // 2026-11-22T10:00:00Z
const T_ISO = '2026-11-22T10:00:00.000Z';
const WAMID_IN = 'wamid.HBgNNTUxMTk5OTk5ODg4OBUCABIYFjNFQjBDMTI3RjZEMDI4OTlBNzZBAA==';
const WAMID_OUT = 'wamid.HBgNNTUxMTk5OTk5ODg4OBUCABEYEjgxQkVFRDVBQTVDODFDOTg3MQA=';

const metadata = { display_phone_number: DISPLAY, phone_number_id: PNID };
const contactMaria = { profile: { name: 'Maria Souza' }, wa_id: '5511999998888' };

function envelope(field: string, value: unknown, time?: number | string) {
  return {
    object: 'whatsapp_business_account',
    entry: [{ id: WABA, ...(time !== undefined ? { time } : {}), changes: [{ value, field }] }],
  };
}

const messagesValue = (messages: unknown[], contacts: unknown[] = [contactMaria]) => ({
  messaging_product: 'whatsapp',
  metadata,
  contacts,
  messages,
});
const statusesValue = (statuses: unknown[]) => ({ messaging_product: 'whatsapp', metadata, statuses });

function only<K extends ProviderFact['kind']>(facts: ProviderFact[], kind: K): Extract<ProviderFact, { kind: K }> {
  expect(facts).toHaveLength(1);
  const fact = facts[0]!;
  expect(fact.kind).toBe(kind);
  return fact as Extract<ProviderFact, { kind: K }>;
}

function def(type: string): EventDefinition {
  const d = getEventDefinition(type);
  if (!d) throw new Error(type);
  return d;
}

/** The builder output must validate against the catalog; returns the parsed data and its key. */
function validate(type: string, data: Record<string, unknown>) {
  const d = def(type);
  const r = d.data.safeParse(data);
  if (!r.success) throw new Error(formatIssue(r.error, 'data'));
  return { data: r.data, key: d.idempotencyKey(r.data, {}) };
}

describe('mapChatappWebhook: messages', () => {
  it('maps a text message with its contact', () => {
    const text = { from: '5511999998888', id: WAMID_IN, timestamp: T, text: { body: 'Olá! Vocês abrem sábado?' }, type: 'text' };
    const { facts, ignored } = mapChatappWebhook(envelope('messages', messagesValue([text])));
    expect(ignored).toBe(0);
    const fact = only(facts, 'message');
    expect(fact).toEqual({
      kind: 'message',
      wabaId: WABA,
      phoneNumberId: PNID,
      displayPhoneNumber: DISPLAY,
      message: text,
      contact: { wa_id: '5511999998888', user_id: null, username: null, phone: '5511999998888', profile_name: 'Maria Souza' },
      occurredAt: T_ISO,
    });
    expect(fact.message).toBe(text); // raw, as sent
    expect(factEventType(fact)).toBe('chatapp.message.received');

    const { data, key } = validate('chatapp.message.received', receivedPayload(fact, { externalId: WAMID_IN }));
    expect(key).toBe(WAMID_IN);
    expect(data).toEqual({
      phone_number_id: PNID,
      message: { ...text, external_id: WAMID_IN },
      contact: { wa_id: '5511999998888', user_id: null, username: null, phone: '5511999998888', profile_name: 'Maria Souza' },
    });
  });

  it('maps a template quick-reply button and an interactive list reply, keeping context', () => {
    const button = {
      context: { from: DISPLAY, id: WAMID_OUT },
      from: '5511999998888',
      id: WAMID_IN,
      timestamp: T,
      type: 'button',
      button: { payload: 'CONFIRMAR_CONSULTA', text: 'Confirmar' },
    };
    const list = {
      context: { from: DISPLAY, id: WAMID_OUT },
      from: '5511999998888',
      id: `${WAMID_IN}2`,
      timestamp: T,
      type: 'interactive',
      interactive: { type: 'list_reply', list_reply: { id: 'slot_14h', title: '14:00', description: 'Terça-feira' } },
    };
    const { facts } = mapChatappWebhook(envelope('messages', messagesValue([button, list])));
    expect(facts.map((f) => f.kind)).toEqual(['message', 'message']);
    const [b, l] = facts as Extract<ProviderFact, { kind: 'message' }>[];
    expect(b!.message['button']).toEqual({ payload: 'CONFIRMAR_CONSULTA', text: 'Confirmar' });
    expect(b!.message['context']).toEqual({ from: DISPLAY, id: WAMID_OUT });
    expect(l!.contact.profile_name).toBe('Maria Souza');
    validate('chatapp.message.received', receivedPayload(b!, { externalId: b!.message['id'] as string }));
    validate('chatapp.message.received', receivedPayload(l!, { externalId: l!.message['id'] as string }));
  });

  it('keeps the click-to-chat ad referral untouched inside the raw message', () => {
    const referral = {
      source_url: 'https://fb.me/3cr4Wqqkk',
      source_id: '120212345678900123',
      source_type: 'ad',
      headline: 'Consulta grátis em novembro',
      body: 'Fale com a gente pelo WhatsApp',
      media_type: 'image',
      image_url: 'https://scontent.xx.fbcdn.net/v/t45.1600-4/ad.jpg',
      ctwa_clid: 'ARAkLkA8rmlFeiCktEJQ-QTwRiyYHAFDLMNDBH0CD3qpjd0HR4irJ6LEkR7JwFF4XvnO2E4Nx0-eM-GABDLOPaOdRMv-_zfUQ2a',
    };
    const msg = { from: '5511999998888', id: WAMID_IN, timestamp: T, type: 'text', text: { body: 'Quero saber mais' }, referral };
    const fact = only(mapChatappWebhook(envelope('messages', messagesValue([msg]))).facts, 'message');
    expect(fact.message['referral']).toBe(referral);
    const { data } = validate('chatapp.message.received', receivedPayload(fact, { externalId: WAMID_IN }));
    expect((data['message'] as Record<string, unknown>)['referral']).toEqual(referral);

    // Ads shown in Status carry no ctwa_clid
    const { ctwa_clid: _c, ...statusAd } = referral;
    const f2 = only(mapChatappWebhook(envelope('messages', messagesValue([{ ...msg, referral: statusAd }]))).facts, 'message');
    validate('chatapp.message.received', receivedPayload(f2, { externalId: WAMID_IN }));
  });

  it('matches the contact by wa_id and supports BSUID-only senders', () => {
    const contacts = [
      { profile: { name: 'Other' }, wa_id: '5511900000000' },
      { profile: { name: 'Joana', username: 'joana.s' }, user_id: 'BR.13491208655302741918' },
    ];
    const msg = { from_user_id: 'BR.13491208655302741918', id: WAMID_IN, timestamp: T, type: 'text', text: { body: 'oi' } };
    const fact = only(mapChatappWebhook(envelope('messages', messagesValue([msg], contacts))).facts, 'message');
    expect(fact.contact).toEqual({
      wa_id: 'BR.13491208655302741918',
      user_id: 'BR.13491208655302741918',
      username: 'joana.s',
      phone: null,
      profile_name: 'Joana',
    });
    validate('chatapp.message.received', receivedPayload(fact, { externalId: WAMID_IN }));

    const byPhone = { from: '5511900000000', id: WAMID_IN, timestamp: T, type: 'text', text: { body: 'oi' } };
    expect(only(mapChatappWebhook(envelope('messages', messagesValue([byPhone], contacts))).facts, 'message').contact.profile_name).toBe(
      'Other',
    );
  });

  it('gives occurredAt null for an unreadable provider time', () => {
    const msg = { from: '5511999998888', id: WAMID_IN, timestamp: 'soon', type: 'text', text: { body: 'x' } };
    expect(only(mapChatappWebhook(envelope('messages', messagesValue([msg]))).facts, 'message').occurredAt).toBeNull();
  });
});

describe('mapChatappWebhook: statuses', () => {
  const pricing = { billable: true, pricing_model: 'PMP', category: 'utility', type: 'regular' };

  it('maps sent with a free-entry-point conversation, delivered and read', () => {
    const sent = {
      id: WAMID_OUT,
      status: 'sent',
      timestamp: T,
      recipient_id: '5511999998888',
      conversation: { id: 'a75d17ad06104c51166f948319b03c6a', expiration_timestamp: '1795428000', origin: { type: 'referral_conversion' } },
      pricing: { billable: false, pricing_model: 'PMP', category: 'referral_conversion', type: 'free_entry_point' },
    };
    const delivered = { id: WAMID_OUT, status: 'delivered', timestamp: T, recipient_id: '5511999998888', pricing };
    const read = { id: WAMID_OUT, status: 'read', timestamp: T, recipient_id: '5511999998888' };
    const { facts, ignored } = mapChatappWebhook(envelope('messages', statusesValue([sent, delivered, read])));
    expect(ignored).toBe(0);
    expect(facts.map((f) => (f.kind === 'status' ? f.status : f.kind))).toEqual(['sent', 'delivered', 'read']);
    const [s, d, r] = facts as Extract<ProviderFact, { kind: 'status' }>[];
    expect(s).toMatchObject({
      messageId: WAMID_OUT,
      recipientId: '5511999998888',
      conversation: sent.conversation,
      pricing: sent.pricing,
      errors: null,
      occurredAt: T_ISO,
    });

    const sentData = validate('chatapp.message.sent', statusPayload(s!));
    expect(sentData.key).toBe(`${WAMID_OUT}:sent`);
    expect(sentData.data['conversation']).toEqual(sent.conversation);

    const dPayload = statusPayload(d!);
    expect(dPayload).not.toHaveProperty('conversation');
    expect(dPayload).toEqual({
      phone_number_id: PNID,
      status: 'delivered',
      message_id: WAMID_OUT,
      recipient_id: '5511999998888',
      pricing,
      errors: null,
    });
    expect(validate('chatapp.message.delivered', dPayload).key).toBe(`${WAMID_OUT}:delivered`);

    expect(statusPayload(r!)).toEqual({
      phone_number_id: PNID,
      status: 'read',
      message_id: WAMID_OUT,
      recipient_id: '5511999998888',
      pricing: null,
      errors: null,
    });
    expect(factEventType(r!)).toBe('chatapp.message.read');
    validate('chatapp.message.read', statusPayload(r!));
  });

  it('reads the end of a free-entry-point window only from a sent status priced free_entry_point', () => {
    const conversation = { id: 'c1', expiration_timestamp: '1795428000', origin: { type: 'referral_conversion' } };
    const fep = { billable: false, pricing_model: 'PMP', category: 'referral_conversion', type: 'free_entry_point' };
    // The status's event payload, as the service reads the window's end from it (freeEntryPointEndOf).
    const status = (s: Record<string, unknown>) =>
      statusPayload(
        only(
          mapChatappWebhook(envelope('messages', statusesValue([{ id: WAMID_OUT, timestamp: T, recipient_id: '5511999998888', ...s }])))
            .facts,
          'status',
        ),
      );
    expect(freeEntryPointEndOf(status({ status: 'sent', conversation, pricing: fep }))).toBe('2026-11-23T10:00:00.000Z');
    expect(
      freeEntryPointEndOf(status({ status: 'sent', conversation: { ...conversation, expiration_timestamp: 1795428000 }, pricing: fep })),
    ).toBe('2026-11-23T10:00:00.000Z');
    // Before graph API 24 every conversation had an expiration: without the free_entry_point price it is not a window.
    expect(freeEntryPointEndOf(status({ status: 'sent', conversation, pricing }))).toBeNull();
    expect(freeEntryPointEndOf(status({ status: 'sent', conversation }))).toBeNull();
    expect(freeEntryPointEndOf(status({ status: 'delivered', conversation, pricing: fep }))).toBeNull();
    expect(freeEntryPointEndOf(status({ status: 'sent', conversation: { id: 'c1' }, pricing: fep }))).toBeNull();
    expect(
      freeEntryPointEndOf(status({ status: 'sent', conversation: { ...conversation, expiration_timestamp: 'soon' }, pricing: fep })),
    ).toBeNull();
  });

  it('maps failed with the provider errors list', () => {
    const errors = [
      {
        code: 131049,
        title: 'This message was not delivered to maintain healthy ecosystem engagement.',
        message: 'This message was not delivered to maintain healthy ecosystem engagement.',
        error_data: { details: 'In order to maintain a healthy ecosystem engagement, the message failed to be delivered.' },
        href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
      },
    ];
    const failed = { id: WAMID_OUT, status: 'failed', timestamp: T, recipient_id: '5511999998888', errors };
    const fact = only(mapChatappWebhook(envelope('messages', statusesValue([failed]))).facts, 'status');
    expect(fact.errors).toEqual(errors);
    const { data, key } = validate('chatapp.message.failed', statusPayload(fact));
    expect(key).toBe(`${WAMID_OUT}:failed`);
    expect(data['errors']).toEqual(errors);
  });

  it('deleted and warning produce nothing and are counted as ignored', () => {
    const { facts, ignored } = mapChatappWebhook(
      envelope(
        'messages',
        statusesValue([
          { id: WAMID_OUT, status: 'deleted', timestamp: T, recipient_id: '5511999998888' },
          {
            id: WAMID_OUT,
            status: 'warning',
            timestamp: T,
            recipient_id: '5511999998888',
            errors: [{ code: 1026, title: 'Receiver incapable' }],
          },
          { id: WAMID_OUT, status: 'delivered', timestamp: T, recipient_id: '5511999998888' },
        ]),
      ),
    );
    expect(facts).toHaveLength(1);
    expect(ignored).toBe(2);
  });
});

describe('mapChatappWebhook: coexistence (echo, edit, revoke)', () => {
  const echoValue = (echoes: unknown[]) => ({ messaging_product: 'whatsapp', metadata, message_echoes: echoes });

  it('maps smb_message_echoes to echo facts with the customer as contact', () => {
    const echo = {
      from: DISPLAY,
      to: '5511999998888',
      id: WAMID_OUT,
      timestamp: T,
      type: 'text',
      text: { body: 'Te mando o orçamento já já' },
    };
    const fact = only(mapChatappWebhook(envelope('smb_message_echoes', echoValue([echo]))).facts, 'echo');
    expect(fact).toMatchObject({ phoneNumberId: PNID, message: echo, occurredAt: T_ISO });
    expect(fact.contact).toEqual({ wa_id: '5511999998888', user_id: null, username: null, phone: '5511999998888', profile_name: null });
    const { data, key } = validate('chatapp.message.echo', echoPayload(fact, { externalId: WAMID_OUT }));
    expect(key).toBe(`${WAMID_OUT}:echo`);
    expect(data['source_app']).toBe('business_app');
  });

  it('maps echoes of type edit and revoke to edited / revoked by the business', () => {
    const edit = {
      from: DISPLAY,
      to: '5511999998888',
      id: 'wamid.EDIT1',
      timestamp: '1795341660',
      type: 'edit',
      edit: { original_message_id: WAMID_OUT, message: { type: 'text', text: { body: 'Te mando o orçamento amanhã' } } },
    };
    const revoke = {
      from: DISPLAY,
      to: '5511999998888',
      id: 'wamid.REV1',
      timestamp: '1795341720',
      type: 'revoke',
      revoke: { original_message_id: WAMID_OUT },
    };
    const { facts, ignored } = mapChatappWebhook(envelope('smb_message_echoes', echoValue([edit, revoke])));
    expect(ignored).toBe(0);
    const [e, r] = facts;
    expect(e).toMatchObject({
      kind: 'edited',
      actor: 'business',
      messageId: WAMID_OUT,
      notificationId: 'wamid.EDIT1',
      editedAt: '2026-11-22T10:01:00.000Z',
    });
    expect(r).toMatchObject({ kind: 'revoked', actor: 'business', messageId: WAMID_OUT, revokedAt: '2026-11-22T10:02:00.000Z' });
    if (e?.kind !== 'edited' || r?.kind !== 'revoked') throw new Error('kinds');
    const edited = validate('chatapp.message.edited', editedPayload(e));
    expect(edited.key).toBe(`${WAMID_OUT}:edited:2026-11-22T10:01:00.000Z`);
    expect(edited.data['message']).toEqual({ type: 'text', text: { body: 'Te mando o orçamento amanhã' } });
    expect(validate('chatapp.message.revoked', revokedPayload(r)).key).toBe(`${WAMID_OUT}:revoked`);
    expect([factEventType(e), factEventType(r)]).toEqual(['chatapp.message.edited', 'chatapp.message.revoked']);
  });

  it("maps the contact's own edit / revoke on the messages field, never as a received message", () => {
    const edit = {
      from: '5511999998888',
      id: 'wamid.EDIT2',
      timestamp: T,
      type: 'edit',
      edit: { original_message_id: WAMID_IN, message: { type: 'text', text: { body: 'Vocês abrem domingo?' } } },
    };
    const revoke = { from: '5511999998888', id: 'wamid.REV2', timestamp: T, type: 'revoke', revoke: { original_message_id: WAMID_IN } };
    const { facts } = mapChatappWebhook(envelope('messages', messagesValue([edit, revoke])));
    expect(facts.map((f) => f.kind)).toEqual(['edited', 'revoked']);
    const [e, r] = facts;
    if (e?.kind !== 'edited' || r?.kind !== 'revoked') throw new Error('kinds');
    expect(e.actor).toBe('contact');
    expect(e.contact?.profile_name).toBe('Maria Souza');
    expect(validate('chatapp.message.edited', editedPayload(e)).data).toMatchObject({
      actor: 'contact',
      contact: { wa_id: '5511999998888' },
    });
    validate('chatapp.message.revoked', revokedPayload(r));
  });

  it('an edit without original_message_id is malformed', () => {
    const edit = { from: '5511999998888', id: 'wamid.EDIT3', timestamp: T, type: 'edit', edit: { message: {} } };
    expect(() => mapChatappWebhook(envelope('messages', messagesValue([edit])))).toThrow(
      /entry\[0\]\.changes\[0\]\.value\.messages\[0\]\.edit\.original_message_id/,
    );
  });
});

describe('mapChatappWebhook: account_update', () => {
  it('maps a ban (DISABLED_UPDATE)', () => {
    const value = { event: 'DISABLED_UPDATE', ban_info: { waba_ban_state: 'SCHEDULE_FOR_DISABLE', waba_ban_date: 'November 29, 2026' } };
    const fact = only(mapChatappWebhook(envelope('account_update', value, 1795341600)).facts, 'account_update');
    expect(fact.wabaId).toBe(WABA);
    expect(fact.data).toEqual({
      waba_id: WABA,
      account_event: 'DISABLED_UPDATE',
      ban_state: 'SCHEDULE_FOR_DISABLE',
      restrictions: null,
      occurred_at: T_ISO,
    });
    expect(fact.data).not.toHaveProperty('violation_type');
    const { key } = validate('chatapp.account.updated', fact.data as unknown as Record<string, unknown>);
    expect(key).toMatch(/^chatapp\.account\.updated:[0-9a-f]{64}$/);
    // provider redelivery: same key
    const again = only(
      mapChatappWebhook(envelope('account_update', { ban_info: value.ban_info, event: value.event }, 1795341600)).facts,
      'account_update',
    );
    expect(validate('chatapp.account.updated', again.data as unknown as Record<string, unknown>).key).toBe(key);
  });

  it('maps a restriction list, with expirations as ISO', () => {
    const value = {
      event: 'ACCOUNT_RESTRICTION',
      restriction_info: [
        { restriction_type: 'RESTRICTED_ADD_PHONE_NUMBER_ACTION', expiration: 1796000000 },
        { restriction_type: 'RESTRICTED_CUSTOMER_INITIATED_MESSAGING', expiration: 'never' },
      ],
    };
    const fact = only(mapChatappWebhook(envelope('account_update', value, '1795341600')).facts, 'account_update');
    expect(fact.data.restrictions).toEqual([
      { restriction_type: 'RESTRICTED_ADD_PHONE_NUMBER_ACTION', expiration: '2026-11-30T00:53:20.000Z' },
      { restriction_type: 'RESTRICTED_CUSTOMER_INITIATED_MESSAGING', expiration: null },
    ]);
    expect(fact.data.ban_state).toBeNull();
    validate('chatapp.account.updated', fact.data as unknown as Record<string, unknown>);

    const lifted = only(
      mapChatappWebhook(envelope('account_update', { event: 'ACCOUNT_RESTRICTION', restriction_info: [] }, 1795341600)).facts,
      'account_update',
    );
    expect(lifted.data.restrictions).toEqual([]);
  });

  it('maps a violation with its type, and an unreadable time to null', () => {
    const fact = only(
      mapChatappWebhook(envelope('account_update', { event: 'ACCOUNT_VIOLATION', violation_info: { violation_type: 'SPAM' } }, 'yesterday'))
        .facts,
      'account_update',
    );
    expect(fact.data).toEqual({
      waba_id: WABA,
      account_event: 'ACCOUNT_VIOLATION',
      ban_state: null,
      restrictions: null,
      violation_type: 'SPAM',
      occurred_at: null,
    });
    validate('chatapp.account.updated', fact.data as unknown as Record<string, unknown>);
  });

  it("uses the customer's WABA of partner events", () => {
    const value = {
      event: 'PARTNER_APP_UNINSTALLED',
      waba_info: { waba_id: '184943124712545', owner_business_id: '1284923862322270', partner_app_id: '869361281603019' },
    };
    const fact = only(mapChatappWebhook(envelope('account_update', value, 1795341600)).facts, 'account_update');
    expect(fact.wabaId).toBe('184943124712545');
    expect(fact.data.waba_id).toBe('184943124712545');
  });

  it('an account_update without event is malformed', () => {
    expect(() => mapChatappWebhook(envelope('account_update', { ban_info: {} }))).toThrow(ProviderPayloadError);
    expect(() => mapChatappWebhook(envelope('account_update', { ban_info: {} }))).toThrow(/^entry\[0\]\.changes\[0\]\.value\.event: /);
  });
});

describe('mapChatappWebhook: phone_number_quality_update', () => {
  it('maps the Cloud API shape (display number + current_limit)', () => {
    const value = { display_phone_number: DISPLAY, event: 'UPGRADE', old_limit: 'TIER_250', current_limit: 'TIER_2K' };
    const { facts, ignored } = mapChatappWebhook(envelope('phone_number_quality_update', value, 1795341600));
    expect(ignored).toBe(0);
    const fact = only(facts, 'quality_update');
    expect(fact.data).toEqual({
      waba_id: WABA,
      phone_number_id: null,
      display_phone_number: DISPLAY,
      messaging_limit_tier: 'TIER_2K',
      occurred_at: T_ISO,
    });
    expect(validate('chatapp.phone_number.quality_updated', fact.data as unknown as Record<string, unknown>).key).toMatch(
      /^chatapp\.phone_number\.quality_updated:[0-9a-f]{64}$/,
    );
    expect(factEventType(fact)).toBe('chatapp.phone_number.quality_updated');
  });

  it('uses phone_number_id and messaging_limit_tier / max_daily_conversations_per_business when sent', () => {
    const a = only(
      mapChatappWebhook(envelope('phone_number_quality_update', { phone_number_id: PNID, messaging_limit_tier: 'TIER_10K' })).facts,
      'quality_update',
    );
    expect(a.data).toMatchObject({
      phone_number_id: PNID,
      display_phone_number: null,
      messaging_limit_tier: 'TIER_10K',
      occurred_at: null,
    });
    validate('chatapp.phone_number.quality_updated', a.data as unknown as Record<string, unknown>);
    const b = only(
      mapChatappWebhook(
        envelope('phone_number_quality_update', {
          display_phone_number: DISPLAY,
          event: 'THROUGHPUT_UPGRADE',
          max_daily_conversations_per_business: 'TIER_UNLIMITED',
        }),
      ).facts,
      'quality_update',
    );
    expect(b.data.messaging_limit_tier).toBe('TIER_UNLIMITED');
  });

  it('produces nothing without a number or without a usable tier', () => {
    for (const value of [
      { event: 'UPGRADE', current_limit: 'TIER_2K' },
      { display_phone_number: '', event: 'UPGRADE', current_limit: 'TIER_2K' },
      { display_phone_number: DISPLAY, event: 'FLAGGED' },
      { display_phone_number: DISPLAY, event: 'ONBOARDING', current_limit: 'TIER_NOT_SET' },
      { display_phone_number: DISPLAY, event: 'UPGRADE', current_limit: 'GREEN' },
    ]) {
      const { facts, ignored } = mapChatappWebhook(envelope('phone_number_quality_update', value, 1795341600));
      expect(facts, JSON.stringify(value)).toEqual([]);
      expect(ignored).toBe(1);
    }
  });
});

describe('mapChatappWebhook: envelope', () => {
  it('ignores other fields and counts them', () => {
    const body = {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: WABA,
          time: 1795341600,
          changes: [
            {
              field: 'message_template_status_update',
              value: {
                event: 'APPROVED',
                message_template_id: 1,
                message_template_name: 'boas_vindas',
                message_template_language: 'pt_BR',
              },
            },
            { field: 'history', value: { messaging_product: 'whatsapp', metadata, history: [] } },
            {
              field: 'messages',
              value: messagesValue([{ from: '5511999998888', id: WAMID_IN, timestamp: T, type: 'text', text: { body: 'oi' } }]),
            },
          ],
        },
        { id: WABA, changes: [{ field: 'security', value: { display_phone_number: DISPLAY, event: 'PIN_CHANGED' } }] },
      ],
      unknown_top_level: true,
    };
    const { facts, ignored } = mapChatappWebhook(body);
    expect(facts.map((f) => f.kind)).toEqual(['message']);
    expect(ignored).toBe(3);
  });

  it('an empty entry list or a messages change without items yields nothing', () => {
    expect(mapChatappWebhook({ object: 'whatsapp_business_account', entry: [] })).toEqual({ facts: [], ignored: 0 });
    expect(mapChatappWebhook(envelope('messages', { messaging_product: 'whatsapp', metadata }))).toEqual({ facts: [], ignored: 1 });
  });

  it('throws ProviderPayloadError naming the bad field', () => {
    const cases: [unknown, RegExp][] = [
      ['not json object', /^\(root\): /],
      [{ object: 'instagram', entry: [] }, /^object: /],
      [{ object: 'whatsapp_business_account' }, /^entry: /],
      [{ object: 'whatsapp_business_account', entry: [{ changes: [] }] }, /^entry\[0\]\.id: /],
      [{ object: 'whatsapp_business_account', entry: [{ id: WABA }] }, /^entry\[0\]\.changes: /],
      [{ object: 'whatsapp_business_account', entry: [{ id: WABA, changes: [{ value: {} }] }] }, /^entry\[0\]\.changes\[0\]\.field: /],
      [
        envelope('messages', { messaging_product: 'whatsapp', metadata: { display_phone_number: DISPLAY }, messages: [] }),
        /^entry\[0\]\.changes\[0\]\.value\.metadata\.phone_number_id: /,
      ],
      [
        envelope('messages', messagesValue([{ from: '5511999998888', timestamp: T, type: 'text', text: { body: 'x' } }])),
        /^entry\[0\]\.changes\[0\]\.value\.messages\[0\]\.id: /,
      ],
      [envelope('messages', statusesValue([{ id: WAMID_OUT, timestamp: T }])), /^entry\[0\]\.changes\[0\]\.value\.statuses\[0\]\.status: /],
      [
        envelope('messages', statusesValue([{ id: WAMID_OUT, status: 'failed', errors: [{ title: 'x' }] }])),
        /^entry\[0\]\.changes\[0\]\.value\.statuses\[0\]\.errors\[0\]\.code: /,
      ],
    ];
    for (const [body, pattern] of cases) {
      let error: unknown;
      try {
        mapChatappWebhook(body);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(body)).toBeInstanceOf(ProviderPayloadError);
      expect((error as ProviderPayloadError).message).toMatch(pattern);
      expect((error as ProviderPayloadError).field.length).toBeGreaterThan(0);
    }
  });
});
