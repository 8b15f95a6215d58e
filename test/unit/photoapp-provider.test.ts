import { describe, expect, it } from 'vitest';
import { formatIssue, getEventDefinition, streamData, type EventDefinition } from '../../src/core/catalog/index.js';
import { ProviderPayloadError } from '../../src/core/catalog/issues.js';
import { mapPhotoappWebhook, photoappReceivedPayload, type PhotoappFact } from '../../src/channels/inbound/photoapp-facts.js';

const IG_ACCOUNT = '17841405822304914';
const IGSID = '6940128465219734';
const T_MS = 1795341600123; // 2026-11-22T10:00:00.123Z
const T_ISO = '2026-11-22T10:00:00.123Z';
const T_SECONDS = '1795341600';
const MID = 'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDA1ODIyMzA0OTE0OjM0MDI4MjM2Njg0MTcxMDMwMTI0NDI1OTk2MjQ0NzE0NzgyMjM3NzozMjQ2NDY3';
const MID_OUT =
  'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDA1ODIyMzA0OTE0OjM0MDI4MjM2Njg0MTcxMDMwMTI0NDI1OTk2MjQ0NzE0NzgyMjM3NzozMjQ2NDk5';

function item(message: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) {
  return {
    sender: { id: IGSID },
    recipient: { id: IG_ACCOUNT },
    timestamp: T_MS,
    ...(message !== undefined ? { message } : {}),
    ...extra,
  };
}

function envelope(messaging: unknown[], entryExtra: Record<string, unknown> = {}) {
  return { object: 'instagram', entry: [{ id: IG_ACCOUNT, time: T_MS + 500, messaging, ...entryExtra }] };
}

function only(body: unknown): PhotoappFact {
  const { facts, ignored } = mapPhotoappWebhook(body);
  expect(ignored).toBe(0);
  expect(facts).toHaveLength(1);
  return facts[0]!;
}

function def(type: string): EventDefinition {
  const d = getEventDefinition(type);
  if (!d) throw new Error(type);
  return d;
}

/** The builder output must validate against the catalog; returns the parsed data and its key. */
function validate(fact: PhotoappFact) {
  const d = def('photoapp.message.received');
  const r = d.data.safeParse(photoappReceivedPayload(fact));
  if (!r.success) throw new Error(formatIssue(r.error, 'data'));
  return { data: r.data, key: d.idempotencyKey(r.data, {}) };
}

const contact = { user_id: IGSID, username: null, profile_name: null };

describe('mapPhotoappWebhook: messages', () => {
  it('maps a text message to the raw-message shape', () => {
    const fact = only(envelope([item({ mid: MID, text: 'Tem no tamanho M?' })]));
    expect(fact).toEqual({
      kind: 'message',
      accountId: IG_ACCOUNT,
      message: { id: MID, external_id: MID, from: IGSID, timestamp: T_SECONDS, type: 'text', text: { body: 'Tem no tamanho M?' } },
      contact,
      occurredAt: T_ISO,
    });

    const { data, key } = validate(fact);
    expect(key).toBe(MID);
    expect(data).toEqual({
      account_id: IG_ACCOUNT,
      message: { id: MID, external_id: MID, from: IGSID, timestamp: T_SECONDS, type: 'text', text: { body: 'Tem no tamanho M?' } },
      contact,
    });

    // shared stream normalization reads it like a chatapp message
    const stream = streamData(def('photoapp.message.received'), data, {});
    expect(stream['message']).toMatchObject({
      id: MID,
      external_id: MID,
      direction: 'inbound',
      type: 'text',
      content: { body: 'Tem no tamanho M?' },
      timestamp: '2026-11-22T10:00:00.000Z',
    });
  });

  it('maps an image attachment (content = the first attachment payload)', () => {
    const url = 'https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=18033569287532475&signature=abc';
    const fact = only(envelope([item({ mid: MID, attachments: [{ type: 'image', payload: { url } }] })]));
    expect(fact.message).toEqual({ id: MID, external_id: MID, from: IGSID, timestamp: T_SECONDS, type: 'image', image: { url } });
    expect(validate(fact).key).toBe(MID);
  });

  it('maps other attachment types (share, story_mention, ig_reel) and keeps a caption and extra attachments', () => {
    const share = only(
      envelope([item({ mid: MID, attachments: [{ type: 'share', payload: { url: 'https://www.instagram.com/p/Cx1/' } }] })]),
    );
    expect(share.message['type']).toBe('share');
    expect(share.message['share']).toEqual({ url: 'https://www.instagram.com/p/Cx1/' });
    validate(share);

    const mention = only(
      envelope([item({ mid: MID, attachments: [{ type: 'story_mention', payload: { url: 'https://lookaside.fbsbx.com/story' } }] })]),
    );
    expect(mention.message).toMatchObject({ type: 'story_mention', story_mention: { url: 'https://lookaside.fbsbx.com/story' } });
    validate(mention);

    const two = [
      { type: 'image', payload: { url: 'https://cdn/1.jpg' } },
      { type: 'image', payload: { url: 'https://cdn/2.jpg' } },
    ];
    const album = only(envelope([item({ mid: MID, text: 'Qual dessas?', attachments: two })]));
    expect(album.message['image']).toEqual({ url: 'https://cdn/1.jpg', caption: 'Qual dessas?' });
    expect(album.message['attachments']).toEqual(two);
    validate(album);

    const noPayload = only(envelope([item({ mid: MID, attachments: [{ type: 'ig_reel' }] })]));
    expect(noPayload.message).toMatchObject({ type: 'ig_reel', ig_reel: {} });
  });

  it('maps a quick reply with its payload and text', () => {
    const fact = only(envelope([item({ mid: MID, text: 'Tamanho M', quick_reply: { payload: 'SIZE_M' } })]));
    expect(fact.message).toEqual({
      id: MID,
      external_id: MID,
      from: IGSID,
      timestamp: T_SECONDS,
      type: 'quick_reply',
      quick_reply: { payload: 'SIZE_M', text: 'Tamanho M' },
    });
    expect(validate(fact).key).toBe(MID);
  });

  it('maps reply_to to context: a reply to a message, or to a story', () => {
    const toMessage = only(envelope([item({ mid: MID, text: 'Esse aqui', reply_to: { mid: MID_OUT } })]));
    expect(toMessage.message['context']).toEqual({ id: MID_OUT });
    expect((validate(toMessage).data['message'] as Record<string, unknown>)['context']).toEqual({ id: MID_OUT });

    const story = { url: 'https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=1798', id: '3220984120938' };
    const toStory = only(envelope([item({ mid: MID, text: 'Que lindo!', reply_to: { story } })]));
    expect(toStory.message['context']).toEqual({ story });
    expect((toStory.message['context'] as Record<string, unknown>)['story']).toBe(story);
    validate(toStory);
  });

  it('keeps an ad referral untouched', () => {
    const referral = {
      ref: 'promo_novembro',
      ad_id: '120212345678900123',
      source: 'ADS',
      type: 'OPEN_THREAD',
      ads_context_data: {
        ad_title: 'Coleção de verão',
        photo_url: 'https://scontent.cdninstagram.com/ad.jpg',
        post_id: '17900000000000001',
      },
    };
    const fact = only(envelope([item({ mid: MID, text: 'Quero saber mais', referral })]));
    expect(fact.message['referral']).toBe(referral);
    const { data } = validate(fact);
    expect((data['message'] as Record<string, unknown>)['referral']).toEqual(referral);
  });

  it('maps several entries and items, with the receiving account of each entry', () => {
    const body = {
      object: 'instagram',
      entry: [
        { id: IG_ACCOUNT, time: T_MS, messaging: [item({ mid: MID, text: 'a' }), item({ mid: MID_OUT, text: 'b' })] },
        {
          id: '17841400000000001',
          time: T_MS,
          messaging: [item({ mid: `${MID}3`, text: 'c' }, { recipient: { id: '17841400000000001' } })],
        },
      ],
    };
    const { facts, ignored } = mapPhotoappWebhook(body);
    expect(ignored).toBe(0);
    expect(facts.map((f) => [f.accountId, f.message['id']])).toEqual([
      [IG_ACCOUNT, MID],
      [IG_ACCOUNT, MID_OUT],
      ['17841400000000001', `${MID}3`],
    ]);
  });
});

describe('mapPhotoappWebhook: timestamps', () => {
  it('converts the millisecond timestamp (number or numeric string) to ISO occurredAt and unix-seconds timestamp', () => {
    const a = only(envelope([item({ mid: MID, text: 'x' })]));
    expect(a.occurredAt).toBe(T_ISO);
    expect(a.message['timestamp']).toBe(T_SECONDS);
    const b = only(envelope([item({ mid: MID, text: 'x' }, { timestamp: String(T_MS) })]));
    expect(b.occurredAt).toBe(T_ISO);
  });

  it('an unreadable or missing timestamp gives occurredAt null and no message timestamp', () => {
    for (const timestamp of ['soon', null, -5, 0, {}, 1e20]) {
      const fact = only(envelope([item({ mid: MID, text: 'x' }, { timestamp })]));
      expect(fact.occurredAt, JSON.stringify(timestamp)).toBeNull();
      expect(fact.message).not.toHaveProperty('timestamp');
      validate(fact);
    }
    const { timestamp: _t, ...noTime } = item({ mid: MID, text: 'x' });
    expect(only(envelope([noTime])).occurredAt).toBeNull();
  });
});

describe('mapPhotoappWebhook: ignored items', () => {
  it('echoes, deleted, unsupported, reactions, reads, postbacks and own messages produce nothing and are counted', () => {
    const body = envelope([
      // what the business sent: sender is the account, is_echo
      item({ mid: MID_OUT, text: 'Temos sim!', is_echo: true }, { sender: { id: IG_ACCOUNT }, recipient: { id: IGSID } }),
      item({ mid: MID, is_deleted: true }),
      item({ mid: MID, is_unsupported: true }),
      item(undefined, { reaction: { mid: MID_OUT, action: 'react', reaction: 'love', emoji: '❤️' } }),
      item(undefined, { read: { mid: MID_OUT } }),
      item(undefined, { postback: { mid: MID, title: 'Ver catálogo', payload: 'CATALOG' } }),
      // sender is the business account itself, without the echo flag
      item({ mid: MID_OUT, text: 'x' }, { sender: { id: IG_ACCOUNT } }),
      // nothing readable
      item({ mid: MID }),
      item({ mid: MID, text: 'real one' }),
    ]);
    const { facts, ignored } = mapPhotoappWebhook(body);
    expect(facts).toHaveLength(1);
    expect(facts[0]!.message['text']).toEqual({ body: 'real one' });
    expect(ignored).toBe(8);
  });

  it('an echo or deletion is ignored even without mid', () => {
    expect(mapPhotoappWebhook(envelope([item({ is_echo: true, text: 'x' })]))).toEqual({ facts: [], ignored: 1 });
    expect(mapPhotoappWebhook(envelope([item({ is_deleted: true })]))).toEqual({ facts: [], ignored: 1 });
  });

  it('counts standby items, changes of other fields and empty entries; an empty entry list yields nothing', () => {
    expect(mapPhotoappWebhook({ object: 'instagram', entry: [] })).toEqual({ facts: [], ignored: 0 });
    expect(mapPhotoappWebhook({ object: 'instagram', entry: [{ id: IG_ACCOUNT, time: T_MS }] })).toEqual({ facts: [], ignored: 1 });
    const body = {
      object: 'instagram',
      entry: [
        { id: IG_ACCOUNT, time: T_MS, changes: [{ field: 'comments', value: { id: '1', text: 'Lindo' } }] },
        { id: IG_ACCOUNT, time: T_MS, standby: [item({ mid: MID, text: 'x' })], messaging: [item({ mid: MID, text: 'y' })] },
      ],
      unknown_top_level: true,
    };
    const { facts, ignored } = mapPhotoappWebhook(body);
    expect(facts).toHaveLength(1);
    expect(ignored).toBe(2);
  });
});

describe('mapPhotoappWebhook: malformed', () => {
  it('throws ProviderPayloadError naming the bad field', () => {
    const cases: [unknown, RegExp][] = [
      ['not json object', /^\(root\): /],
      [{ object: 'whatsapp_business_account', entry: [] }, /^object: /],
      [{ object: 'instagram' }, /^entry: /],
      [{ object: 'instagram', entry: [{ messaging: [] }] }, /^entry\[0\]\.id: /],
      [{ object: 'instagram', entry: [{ id: IG_ACCOUNT, messaging: {} }] }, /^entry\[0\]\.messaging: /],
      [envelope(['x']), /^entry\[0\]\.messaging\[0\]: /],
      [envelope([item({ mid: MID, text: 'a' }), item({ text: 'no mid' })]), /^entry\[0\]\.messaging\[1\]\.message\.mid: /],
      [envelope([item({ mid: '', text: 'empty mid' })]), /^entry\[0\]\.messaging\[0\]\.message\.mid: /],
      [envelope([item('text' as unknown as Record<string, unknown>)]), /^entry\[0\]\.messaging\[0\]\.message: /],
      [envelope([item({ mid: MID, text: 'x' }, { sender: {} })]), /^entry\[0\]\.messaging\[0\]\.sender\.id: /],
      [envelope([item({ mid: MID, text: 'x' }, { sender: undefined })]), /^entry\[0\]\.messaging\[0\]\.sender: /],
      [
        envelope([item({ mid: MID, attachments: [{ payload: { url: 'u' } }] })]),
        /^entry\[0\]\.messaging\[0\]\.message\.attachments\[0\]\.type: /,
      ],
      [
        envelope([item({ mid: MID, attachments: [{ type: 'id', payload: {} }] })]),
        /^entry\[0\]\.messaging\[0\]\.message\.attachments\[0\]\.type: /,
      ],
      [envelope([item({ mid: MID, quick_reply: {} })]), /^entry\[0\]\.messaging\[0\]\.message\.quick_reply\.payload: /],
    ];
    for (const [body, pattern] of cases) {
      let error: unknown;
      try {
        mapPhotoappWebhook(body);
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(body)).toBeInstanceOf(ProviderPayloadError);
      expect((error as ProviderPayloadError).message, JSON.stringify(body)).toMatch(pattern);
      expect((error as ProviderPayloadError).field.length).toBeGreaterThan(0);
    }
  });

  it('the error field is the path of the message id', () => {
    try {
      mapPhotoappWebhook(envelope([item({ mid: MID, text: 'a' }), item({ text: 'b' })]));
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ProviderPayloadError);
      expect((e as ProviderPayloadError).field).toBe('entry[0].messaging[1].message.mid');
      expect((e as ProviderPayloadError).name).toBe('ProviderPayloadError');
    }
  });
});
