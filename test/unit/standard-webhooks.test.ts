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

  it('is keyed by the UTF-8 bytes of the whole secret, as X-Webhook-Signature is', () => {
    expect(standardWebhookKey('whsec_abc-_é')).toEqual(Buffer.from('whsec_abc-_é', 'utf8'));
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

  it('verify with the official library given the secret as the user has it, as a raw key', () => {
    // Generated secrets (many, so some hold the `-` and `_` of base64url) and chosen ones.
    const secrets = [...Array.from({ length: 20 }, generateSigningSecret), 'my own secret of 16+ chars', 'whsec_not_base64_at_all!'];
    for (const secret of secrets) {
      const body = JSON.stringify({ event: 'crm.demand.created', note: 'ünïcödé ✓' });
      const m = message(secret, body);
      const headers = webhookHeaders(m);
      expect(new Webhook(secret, { format: 'raw' }).verify(m.body, headers)).toEqual(JSON.parse(body));
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

  it("cannot use the library's base64 form for our secrets: its decoder refuses base64url", () => {
    // Why the key is the raw secret: a generated secret with `-` or `_` does not even construct.
    expect(() => new Webhook('whsec_jjtFoSCR7m1xzYpO-dcTRHVtfZgB9RWIzE4hHGKRqQw')).toThrow();
  });
});
