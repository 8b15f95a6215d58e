/** POST /api/v1/messages on real Postgres and the local provider: send, refuse, register (DECISIONS "Outbound messages"). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, sha256Hex } from '../../src/core/catalog/canonical-json.js';
import { parseSendRequest } from '../../src/core/outbound-message.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { createTenant, testDb, type Tenant } from '../support/harness.js';
import { connectPhotoappAccount, startApiWithProvider, type ApiWithProvider, unreachableProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider();
  // These tests look at sends, not at the statuses that follow (message-statuses.test.ts).
  await bed.control('/settings', { auto_statuses: false });
});
afterAll(() => bed.close());

interface Setup {
  tenant: Tenant;
  chatapp: string;
  photoapp: string;
  sandbox: string;
  pnid: string;
  photoappProviderId: string;
}

async function setup(): Promise<Setup> {
  const tenant = await createTenant();
  const waba = await bed.control('/wabas', { phone_numbers: [{ display_phone_number: '+1 555 0100' }] });
  const sandboxWaba = await bed.control('/wabas', { phone_numbers: [{}] });
  const pnid = waba.phone_numbers[0].id as string;
  const db = testDb();
  const chatapp = await createChannelAccount(db, {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: '+1 555 0100',
    phoneNumberId: pnid,
    wabaId: waba.id,
  });
  const photoapp = await connectPhotoappAccount(bed, tenant);
  const sandbox = await createChannelAccount(db, {
    accountId: tenant.accountId,
    channel: 'chatapp',
    display: 'Sandbox',
    phoneNumberId: sandboxWaba.phone_numbers[0].id,
    wabaId: sandboxWaba.id,
    environment: 'sandbox',
  });
  return {
    tenant,
    chatapp: chatapp.id,
    photoapp: photoapp.channelAccountId,
    sandbox: sandbox.id,
    pnid,
    photoappProviderId: photoapp.providerAccountId,
  };
}

const send = (key: string, body: unknown) => bed.api.request('POST', '/api/v1/messages', { key, body });
const messageCount = async (channelAccountId: string) =>
  Number((await testDb().query(`SELECT count(*) FROM messages WHERE channel_account_id = $1`, [channelAccountId])).rows[0].count);

describe('POST /api/v1/messages on chatapp', () => {
  it('sends through the provider and registers the message with its contact and conversation before answering 202 queued', async () => {
    const s = await setup();
    const res = await send(s.tenant.key, { channel_account_id: s.chatapp, to: '+1 (555) 000-1111', type: 'text', text: { body: 'Hello' } });
    expect(res.status).toBe(202);
    const m = res.body.data;
    expect(m).toMatchObject({
      channel_account_id: s.chatapp,
      channel: 'chatapp',
      direction: 'outbound',
      type: 'text',
      status: 'queued',
      to: '15550001111',
    });
    expect(m.external_id).toMatch(/^wamid\./);
    const { rows } = await testDb().query(`SELECT m.*, c.wa_id FROM messages m JOIN contacts c ON c.id = m.contact_id WHERE m.id = $1`, [
      m.id,
    ]);
    expect(rows[0]).toMatchObject({
      external_id: m.external_id,
      direction: 'outbound',
      status: 'queued',
      wa_id: '15550001111',
      conversation_id: m.conversation_id,
    });
    expect(m.conversation_id).not.toBeNull();
    // What the provider got: the Cloud API body, from the channel account's number.
    const sent = await bed.control(`/messages/${m.external_id}`);
    expect(sent).toMatchObject({
      from: s.pnid,
      to: '15550001111',
      body: { messaging_product: 'whatsapp', to: '15550001111', type: 'text', text: { body: 'Hello' } },
    });
  });

  it('sends templates and media in the Cloud API shape', async () => {
    const s = await setup();
    const t = await send(s.tenant.key, {
      channel_account_id: s.chatapp,
      to: '15550002222',
      type: 'template',
      template: { name: 'order_update', language: 'en_US', components: [{ type: 'body', parameters: [{ type: 'text', text: '42' }] }] },
    });
    expect(t.status).toBe(202);
    expect((await bed.control(`/messages/${t.body.data.external_id}`)).body.template).toEqual({
      name: 'order_update',
      language: { code: 'en_US' },
      components: [{ type: 'body', parameters: [{ type: 'text', text: '42' }] }],
    });
    const img = await send(s.tenant.key, {
      channel_account_id: s.chatapp,
      to: '15550002222',
      type: 'image',
      media: { link: 'https://cdn.example/a.png', caption: 'A' },
    });
    expect(img.status).toBe(202);
    expect((await bed.control(`/messages/${img.body.data.external_id}`)).body.image).toEqual({
      link: 'https://cdn.example/a.png',
      caption: 'A',
    });
  });

  it.each([
    [{ type: 'text' }, 'text'],
    [{ type: 'fax', text: { body: 'x' } }, 'type'],
    [{ type: 'image', text: { body: 'x' }, media: { link: 'https://cdn.example/a.png' } }, 'text'],
    [{ type: 'image', media: { id: '1', link: 'https://cdn.example/a.png' } }, 'media'],
    [{ type: 'image', media: { link: 'http://cdn.example/a.png' } }, 'media.link'],
    [{ type: 'text', text: { body: 'x' }, colour: 'red' }, 'colour'],
    [{ type: 'text', text: { body: 'x' }, to: 'not a phone' }, 'to'],
    [{ type: 'text', text: { body: 'x' }, channel_account_id: 'nope' }, 'channel_account_id'],
  ])('refuses %j with 422 invalid_message naming %s, registering nothing', async (fields, field) => {
    const s = await setup();
    const res = await send(s.tenant.key, { channel_account_id: s.chatapp, to: '15550001111', ...fields });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_message');
    expect(res.body.error.message).toContain(field);
    expect(await messageCount(s.chatapp)).toBe(0);
  });

  it('a provider refusal is 502 provider_error and registers nothing', async () => {
    const s = await setup();
    const unknown = await createChannelAccount(testDb(), {
      accountId: s.tenant.accountId,
      channel: 'chatapp',
      display: 'Gone',
      phoneNumberId: `gone${Date.now()}`,
      wabaId: 'w',
    });
    const res = await send(s.tenant.key, { channel_account_id: unknown.id, to: '15550001111', type: 'text', text: { body: 'x' } });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('provider_error');
    expect(res.body.error.message).toContain('does not exist');
    expect(await messageCount(unknown.id)).toBe(0);
  });

  it('an unreachable provider is 503 provider_unavailable with Retry-After, an unconfigured one 503 provider_not_configured', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550001111', type: 'text', text: { body: 'x' } };
    const down = await bed.withProvider(unreachableProvider(), () => send(s.tenant.key, body));
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('provider_unavailable');
    expect(down.headers.get('retry-after')).toBe('5');
    const unset = await bed.withProvider(undefined, () => send(s.tenant.key, body));
    expect(unset.status).toBe(503);
    expect(unset.body.error.code).toBe('provider_not_configured');
    expect(await messageCount(s.chatapp)).toBe(0);
  });
});

describe('Idempotency-Key', () => {
  const withKey = (key: string, idem: string, body: unknown) =>
    bed.api.request('POST', '/api/v1/messages', { key, body, headers: { 'idempotency-key': idem } });

  it('a retry with the same key and request answers the first message and sends nothing again', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550001111', type: 'text', text: { body: 'Once' } };
    const first = await withKey(s.tenant.key, 'order-42', body);
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await withKey(s.tenant.key, 'order-42', body);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await messageCount(s.chatapp)).toBe(1);
    const sentByProvider = [...bed.provider.state.messages.values()].filter((m) => m.from === s.pnid);
    expect(sentByProvider).toHaveLength(1);
    // Another key is another send.
    expect((await withKey(s.tenant.key, 'order-43', body)).body.data.id).not.toBe(first.body.data.id);
  });

  it('the same key with another request is 422 idempotency_key_reused; keys are per Account and environment', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550001111', type: 'text', text: { body: 'A' } };
    expect((await withKey(s.tenant.key, 'k-1', body)).status).toBe(202);
    const other = await withKey(s.tenant.key, 'k-1', { ...body, text: { body: 'B' } });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    const sandboxKey = await s.tenant.keyFor(['messages:write'], 'sandbox');
    expect((await withKey(sandboxKey, 'k-1', { ...body, channel_account_id: s.sandbox })).status).toBe(202);
  });

  it('a failed send frees its key: the retry sends', async () => {
    const s = await setup();
    const media = await bed.control('/media', {});
    const body = { channel_account_id: s.chatapp, to: '15550001111', type: 'image', media: { id: media.id } };
    expect((await withKey(s.tenant.key, 'img-1', body)).body.error.code).toBe('media_not_ready');
    await bed.control(`/media/${media.id}/ready`, {});
    const retry = await withKey(s.tenant.key, 'img-1', body);
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body.data.status).toBe('queued');
  });

  it('a key still in flight is 409 idempotency_key_in_use; a malformed key is 422', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550001111', type: 'text', text: { body: 'x' } };
    await testDb().query(
      `INSERT INTO message_idempotency_keys (account_id, environment, key, request_hash) VALUES ($1, 'live', 'busy', $2)`,
      [s.tenant.accountId, sha256Hex(canonicalJson(parseSendRequest(body)))],
    );
    const busy = await withKey(s.tenant.key, 'busy', body);
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('idempotency_key_in_use');
    // Abandoned (older than a minute): taken over, and the send goes out.
    await testDb().query(
      `UPDATE message_idempotency_keys SET reserved_at = now() - interval '2 minutes' WHERE key = 'busy' AND account_id = $1`,
      [s.tenant.accountId],
    );
    expect((await withKey(s.tenant.key, 'busy', body)).status).toBe(202);
    const bad = await withKey(s.tenant.key, 'a'.repeat(256), body);
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toContain('Idempotency-Key');
  });
});

describe('a send the provider may have taken without answering', () => {
  const withKey = (key: string, idem: string, body: unknown) =>
    bed.api.request('POST', '/api/v1/messages', { key, body, headers: { 'idempotency-key': idem } });
  /** The provider takes each send and answers only after 1.5 s; the platform gives up after 200 ms. */
  const slowProvider = <T>(fn: () => Promise<T>) => bed.withSlowProvider({ answerDelayMs: 1_500, timeoutMs: 200 }, fn);
  const sentTo = (s: Setup, to: string) => [...bed.provider.state.messages.values()].filter((m) => m.from === s.pnid && m.to === to);

  it('is 504 provider_outcome_unknown, and its Idempotency-Key never sends it again, even past the abandonment minute', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550002222', type: 'text', text: { body: 'Once only' } };
    const first = await slowProvider(() => withKey(s.tenant.key, 'maybe-1', body));
    expect(first.status).toBe(504);
    expect(first.body.error.code).toBe('provider_outcome_unknown');
    expect(sentTo(s, '15550002222')).toHaveLength(1);

    const retry = await withKey(s.tenant.key, 'maybe-1', body);
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe('send_outcome_unknown');
    // A reservation older than a minute is taken over as abandoned; this one is not.
    await testDb().query(
      `UPDATE message_idempotency_keys SET reserved_at = now() - interval '2 minutes' WHERE key = 'maybe-1' AND account_id = $1`,
      [s.tenant.accountId],
    );
    expect((await withKey(s.tenant.key, 'maybe-1', body)).body.error.code).toBe('send_outcome_unknown');
    expect(sentTo(s, '15550002222')).toHaveLength(1);
    expect(await messageCount(s.chatapp)).toBe(0);
    // A new key is the caller's explicit choice to send again.
    expect((await withKey(s.tenant.key, 'maybe-2', body)).status).toBe(202);
    expect(sentTo(s, '15550002222')).toHaveLength(2);
  });

  it('a provider that refused the connection did not send: the key is freed and the retry sends', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550003333', type: 'text', text: { body: 'x' } };
    const down = await bed.withProvider(unreachableProvider(), () => withKey(s.tenant.key, 'down-1', body));
    expect(down.body.error.code).toBe('provider_unavailable');
    const retry = await withKey(s.tenant.key, 'down-1', body);
    expect(retry.status).toBe(202);
    expect(sentTo(s, '15550003333')).toHaveLength(1);
  });
});

describe('a send the provider accepted keeps its Idempotency-Key bound to it', () => {
  const withKey = (key: string, idem: string, body: unknown) =>
    bed.api.request('POST', '/api/v1/messages', { key, body, headers: { 'idempotency-key': idem } });
  const sentTo = (s: Setup, to: string) => [...bed.provider.state.messages.values()].filter((m) => m.from === s.pnid && m.to === to);

  it('the registration fails after the provider’s 2xx: a retry with the same key is 409 send_outcome_unknown and the provider gets one send', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550004444', type: 'text', text: { body: 'Registered?' } };
    // A failure of Postgres in the registration, for this channel account only.
    const trigger = `refuse_messages_${s.chatapp.replace(/-/g, '_')}`;
    await testDb().query(
      `CREATE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF NEW.channel_account_id = '${s.chatapp}' THEN RAISE EXCEPTION 'registration refused by the test'; END IF;
         RETURN NEW; END $$;
       CREATE TRIGGER ${trigger} BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION ${trigger}()`,
    );
    let first;
    try {
      first = await withKey(s.tenant.key, 'reg-1', body);
    } finally {
      await testDb().query(`DROP TRIGGER ${trigger} ON messages; DROP FUNCTION ${trigger}()`);
    }
    expect(first.status).toBeGreaterThanOrEqual(500);
    // The harness puts the error the API met beside the envelope, which names none.
    expect(first.body.error.message).not.toContain('refused');
    expect(first.text).toContain('registration refused by the test');
    expect(sentTo(s, '15550004444')).toHaveLength(1);
    const retry = await withKey(s.tenant.key, 'reg-1', body);
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe('send_outcome_unknown');
    expect(sentTo(s, '15550004444')).toHaveLength(1);
  });

  it('when marking the key fails too (Postgres still down), the mark is retried: past the abandonment minute the key still does not send again', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550007777', type: 'text', text: { body: 'Blip' } };
    const name = `blip_${s.chatapp.replace(/-/g, '_')}`;
    // The registration fails, and so does the first attempt to mark the key (a sequence is not rolled back).
    await testDb().query(
      `CREATE SEQUENCE ${name}_marks;
       CREATE FUNCTION ${name}_msg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF NEW.channel_account_id = '${s.chatapp}' THEN RAISE EXCEPTION 'registration refused by the test'; END IF;
         RETURN NEW; END $$;
       CREATE TRIGGER ${name}_msg BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION ${name}_msg();
       CREATE FUNCTION ${name}_key() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF NEW.key = '${name}' AND NEW.outcome_unknown_at IS NOT NULL AND nextval('${name}_marks') = 1 THEN
           RAISE EXCEPTION 'mark refused by the test'; END IF;
         RETURN NEW; END $$;
       CREATE TRIGGER ${name}_key BEFORE UPDATE ON message_idempotency_keys FOR EACH ROW EXECUTE FUNCTION ${name}_key()`,
    );
    let first;
    try {
      first = await withKey(s.tenant.key, name, body);
    } finally {
      await testDb().query(
        `DROP TRIGGER ${name}_msg ON messages; DROP FUNCTION ${name}_msg();
         DROP TRIGGER ${name}_key ON message_idempotency_keys; DROP FUNCTION ${name}_key(); DROP SEQUENCE ${name}_marks`,
      );
    }
    expect(first.status).toBeGreaterThanOrEqual(500);
    expect(sentTo(s, '15550007777')).toHaveLength(1);
    await testDb().query(
      `UPDATE message_idempotency_keys SET reserved_at = now() - interval '2 minutes' WHERE key = $1 AND account_id = $2`,
      [name, s.tenant.accountId],
    );
    const retry = await withKey(s.tenant.key, name, body);
    expect(retry.body.error?.code).toBe('send_outcome_unknown');
    expect(sentTo(s, '15550007777')).toHaveLength(1);
  });

  it('a 2xx without a message id is 502, and a retry with the same key is 409 send_outcome_unknown without a second send', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550005555', type: 'text', text: { body: 'No id' } };
    const real = bed.api.deps.providerApi!;
    // The real provider takes the send; its answer reaches the platform without the id.
    const withoutId: typeof real = { get: (...a) => real.get(...a), post: async (...a) => (await real.post(...a), {}) as never };
    const first = await bed.withProvider(withoutId, () => withKey(s.tenant.key, 'noid-1', body));
    expect(first.status).toBe(502);
    expect(sentTo(s, '15550005555')).toHaveLength(1);
    const retry = await withKey(s.tenant.key, 'noid-1', body);
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe('send_outcome_unknown');
    expect(sentTo(s, '15550005555')).toHaveLength(1);
    expect(await messageCount(s.chatapp)).toBe(0);
  });

  it('an abandoned reservation taken over with another body is 422 idempotency_key_reused and sends nothing', async () => {
    const s = await setup();
    const body = { channel_account_id: s.chatapp, to: '15550006666', type: 'text', text: { body: 'First' } };
    await testDb().query(
      `INSERT INTO message_idempotency_keys (account_id, environment, key, request_hash, reserved_at)
       VALUES ($1, 'live', 'gone-1', $2, now() - interval '2 minutes')`,
      [s.tenant.accountId, sha256Hex(canonicalJson(parseSendRequest(body)))],
    );
    const other = await withKey(s.tenant.key, 'gone-1', { ...body, text: { body: 'Second' } });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(sentTo(s, '15550006666')).toHaveLength(0);
    // The first body still takes the abandoned key over and sends.
    expect((await withKey(s.tenant.key, 'gone-1', body)).status).toBe(202);
    expect(sentTo(s, '15550006666')).toHaveLength(1);
  });
});

describe('quick replies', () => {
  const replies = (n: number) => Array.from({ length: n }, (_, i) => ({ title: `Option ${i + 1}` }));

  it('photoapp takes 13, refuses 14 with 422 invalid_message', async () => {
    const s = await setup();
    const ok = await send(s.tenant.key, {
      channel_account_id: s.photoapp,
      to: 'igsid-1',
      type: 'text',
      text: { body: 'Pick' },
      quick_replies: replies(13),
    });
    expect(ok.status).toBe(202);
    const sent = await bed.control(`/messages/${ok.body.data.external_id}`);
    expect(sent.body.message.quick_replies).toHaveLength(13);
    expect(sent.body.message.quick_replies[0]).toEqual({ content_type: 'text', title: 'Option 1', payload: 'Option 1' });
    const tooMany = await send(s.tenant.key, {
      channel_account_id: s.photoapp,
      to: 'igsid-1',
      type: 'text',
      text: { body: 'Pick' },
      quick_replies: replies(14),
    });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error).toMatchObject({ code: 'invalid_message', message: expect.stringContaining('quick_replies') });
    expect(await messageCount(s.photoapp)).toBe(1);
  });

  it('chatapp refuses any quick reply', async () => {
    const s = await setup();
    const res = await send(s.tenant.key, {
      channel_account_id: s.chatapp,
      to: '15550001111',
      type: 'text',
      text: { body: 'Pick' },
      quick_replies: replies(1),
    });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'invalid_message', message: expect.stringContaining('quick_replies') });
    expect(await messageCount(s.chatapp)).toBe(0);
  });
});

describe('media not ready', () => {
  it('is 202 media_not_ready with Retry-After and the error envelope, registering nothing; once ready the send is queued', async () => {
    const s = await setup();
    const media = await bed.control('/media', { ready: false });
    const body = { channel_account_id: s.chatapp, to: '15550001111', type: 'image', media: { id: media.id } };
    const early = await send(s.tenant.key, body);
    expect(early.status).toBe(202);
    expect(early.headers.get('retry-after')).toBe('5');
    expect(early.body).toEqual({ error: { code: 'media_not_ready', message: expect.any(String) } });
    expect(await messageCount(s.chatapp)).toBe(0);

    await bed.control(`/media/${media.id}/ready`, {});
    const later = await send(s.tenant.key, body);
    expect(later.status).toBe(202);
    expect(later.body.data).toMatchObject({ status: 'queued', type: 'image' });
    expect(await messageCount(s.chatapp)).toBe(1);
  });

  it('applies to photoapp attachments too', async () => {
    const s = await setup();
    const media = await bed.control('/media', {});
    const res = await send(s.tenant.key, { channel_account_id: s.photoapp, to: 'igsid-2', type: 'image', media: { id: media.id } });
    expect(res.status).toBe(202);
    expect(res.body.error.code).toBe('media_not_ready');
    expect(await messageCount(s.photoapp)).toBe(0);
  });
});

describe('isolation of the send route', () => {
  it('another Account’s channel account is 404; a sandbox key cannot send through a live one; a missing scope is 403', async () => {
    const s = await setup();
    const other = await createTenant();
    const body = { channel_account_id: s.chatapp, to: '15550001111', type: 'text', text: { body: 'x' } };
    const foreign = await send(other.key, body);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    const sandboxKey = await s.tenant.keyFor(['messages:write'], 'sandbox');
    expect((await send(sandboxKey, body)).status).toBe(404);
    // ...but through its own sandbox channel account it can.
    expect((await send(sandboxKey, { ...body, channel_account_id: s.sandbox })).status).toBe(202);
    const liveKeyOnSandbox = await send(await s.tenant.keyFor(['messages:write']), { ...body, channel_account_id: s.sandbox });
    expect(liveKeyOnSandbox.status).toBe(404);
    const readOnly = await send(await s.tenant.keyFor(['messages:read', 'account:read']), body);
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.error.code).toBe('insufficient_scope');
    expect(await messageCount(s.chatapp)).toBe(0);
  });
});
