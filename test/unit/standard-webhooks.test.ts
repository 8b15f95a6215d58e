/** The Standard Webhooks headers beside ours, checked against the specification's vector and its official library. */
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { webhookHeaders } from '../../src/delivery/send-webhook.js';
import { generateSigningSecret, signBody, standardWebhookKey, standardWebhookSignature } from '../../src/security/signature.js';

// The example of the specification (standardwebhooks.com, "Signature scheme"), also in its libraries' tests.
const SPEC = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const message = (secret: string, body: string) => ({
  url: 'https://receiver.test/hooks',
  secret,
  authorization: null,
  eventType: 'crm.demand.created',
  idempotencyKey: 'crm:demand:dem_01:1',
  webhookId: crypto.randomUUID(),
  body: Buffer.from(body, 'utf8'),
});

describe('standardWebhookSignature', () => {
  it('gives the signature of the specification for its key, id, timestamp and body', () => {
    const key = Buffer.from(SPEC.secret.slice('whsec_'.length), 'base64');
    expect(standardWebhookSignature(key, SPEC.id, SPEC.timestamp, SPEC.body)).toBe(SPEC.signature);
    expect(standardWebhookSignature(key, SPEC.id, SPEC.timestamp, Buffer.from(SPEC.body))).toBe(SPEC.signature);
    // The official library agrees, and any change of id, timestamp or body changes it.
    expect(new Webhook(SPEC.secret).sign(SPEC.id, new Date(SPEC.timestamp * 1000), SPEC.body)).toBe(SPEC.signature);
    expect(standardWebhookSignature(key, SPEC.id, SPEC.timestamp + 1, SPEC.body)).not.toBe(SPEC.signature);
    expect(standardWebhookSignature(key, 'msg_other', SPEC.timestamp, SPEC.body)).not.toBe(SPEC.signature);
    expect(standardWebhookSignature(key, SPEC.id, SPEC.timestamp, '{"test": 2432232315}')).not.toBe(SPEC.signature);
  });

  it('is keyed by the UTF-8 bytes of the whole secret for a secret not in the standard form, as X-Webhook-Signature is', () => {
    expect(standardWebhookKey('whsec_abc-_é')).toEqual(Buffer.from('whsec_abc-_é', 'utf8'));
    // The old generated form (43 base64url characters, no `=`), even with no `-` or `_` in it.
    const old = 'whsec_jjtFoSCR7m1xzYpOadcTRHVtfZgB9RWIzE4hHGKRqQw';
    expect(standardWebhookKey(old)).toEqual(Buffer.from(old, 'utf8'));
    // Not canonical (its last character's unused bits set), or not 32 bytes: not the standard form.
    expect(standardWebhookKey('whsec_3q2+7wEXAMPLEv5dH0hZ1lS8nQkQm9YV0cXo1pA2bC1=')).toEqual(
      Buffer.from('whsec_3q2+7wEXAMPLEv5dH0hZ1lS8nQkQm9YV0cXo1pA2bC1=', 'utf8'),
    );
    expect(standardWebhookKey(SPEC.secret)).toEqual(Buffer.from(SPEC.secret, 'utf8'));
  });

  it('is keyed by the decoded bytes of a secret in the standard form (whsec_ + base64 of 32 bytes)', () => {
    const bytes = crypto.randomBytes(32);
    expect(standardWebhookKey(`whsec_${bytes.toString('base64')}`)).toEqual(bytes);
  });
});

describe('the headers of a delivery', () => {
  it('carry webhook-id, webhook-timestamp and webhook-signature beside ours, which stay as they were', () => {
    const secret = generateSigningSecret();
    const m = message(secret, '{"event":"crm.demand.created"}');
    const before = Math.floor(Date.now() / 1000);
    const h = webhookHeaders(m);
    expect(h['x-webhook-signature']).toBe(signBody(secret, m.body));
    expect(h['x-idempotency-key']).toBe(m.idempotencyKey);
    expect(h['x-webhook-event']).toBe(m.eventType);
    expect(h['webhook-id']).toBe(m.webhookId);
    expect(Number(h['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
    expect(Number(h['webhook-timestamp'])).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(webhookHeaders({ ...m, timestampSeconds: 1614265330 })['webhook-timestamp']).toBe('1614265330');
  });

  it('of a new generated secret verify with the Standard Webhooks scheme as the specification defines it, and with X-Webhook-Signature', () => {
    // Many, so that some hold a `+` or `/` (the characters base64url would have changed).
    for (const secret of Array.from({ length: 20 }, generateSigningSecret)) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const body = JSON.stringify({ event: 'crm.demand.created', note: 'ünïcödé ✓' });
      const m = message(secret, body);
      const headers = webhookHeaders(m);
      // The specification's own verification, written here: HMAC-SHA256 of `id.timestamp.body` keyed by the base64-decoded secret after `whsec_`.
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      const expected = crypto
        .createHmac('sha256', key)
        .update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`)
        .digest('base64');
      expect(headers['webhook-signature']).toBe(`v1,${expected}`);
      // The official library, given the secret exactly as shown.
      expect(new Webhook(secret).verify(m.body, headers)).toEqual(JSON.parse(body));
      expect(() => new Webhook(secret).verify(Buffer.from(`${body} `), headers)).toThrow(/No matching signature/);
      // SPEC 5's signature: the UTF-8 bytes of the whole secret, prefix included.
      expect(headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex'));
    }
  });

  it('of an old-form or chosen secret verify as before: with the official library given the secret as a raw key', () => {
    // Secrets generated before (base64url) and chosen ones.
    const oldForm = Array.from({ length: 20 }, () => `whsec_${crypto.randomBytes(32).toString('base64url')}`);
    const secrets = [...oldForm, 'my own secret of 16+ chars', 'whsec_not_base64_at_all!', SPEC.secret];
    for (const secret of secrets) {
      const body = JSON.stringify({ event: 'crm.demand.created', note: 'ünïcödé ✓' });
      const m = message(secret, body);
      const headers = webhookHeaders(m);
      expect(new Webhook(secret, { format: 'raw' }).verify(m.body, headers)).toEqual(JSON.parse(body));
      expect(headers['x-webhook-signature']).toBe(signBody(secret, m.body));
      // Another secret, or another body, does not verify.
      expect(() => new Webhook(`${secret}x`, { format: 'raw' }).verify(m.body, headers)).toThrow(/No matching signature/);
      expect(() => new Webhook(secret, { format: 'raw' }).verify(Buffer.from(`${body} `), headers)).toThrow(/No matching signature/);
    }
    // A secret beyond ASCII: the library's string form takes one byte per UTF-16 code unit, so pass its UTF-8 bytes.
    const wide = 'clé secrète ✓ très longue';
    const headers = webhookHeaders(message(wide, '{}'));
    expect(new Webhook(Buffer.from(wide, 'utf8'), { format: 'raw' }).verify('{}', headers)).toEqual({});
    expect(() => new Webhook(wide, { format: 'raw' }).verify('{}', headers)).toThrow(/No matching signature/);
  });
});
