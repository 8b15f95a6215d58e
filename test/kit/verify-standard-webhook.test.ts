/** verifyStandardWebhook: the Standard Webhooks headers the service sends, checked like the official library does. */
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { standardSignatureFor, verifyStandardWebhook, verifyWebhook } from '@webhook-platform/sdk';
import { webhookHeaders } from '../../src/delivery/send-webhook.js';
import { generateSigningSecret } from '../../src/security/signature.js';

// A secret of the old generated form (base64url): it verifies as it always did.
const secret = 'whsec_' + crypto.randomBytes(32).toString('base64url');
const raw = Buffer.from('{"event":"crm.demand.created",  "n":1.0}', 'utf8');
// What the service sends, built by the service's own code.
const sent = webhookHeaders({
  url: 'https://receiver.test/hooks',
  secret,
  authorization: null,
  eventType: 'crm.demand.created',
  idempotencyKey: 'crm:demand:dem_1:1',
  webhookId: crypto.randomUUID(),
  body: raw,
});

describe('verifyStandardWebhook', () => {
  it('accepts what the service sends, as the official library does, with Node or fetch headers', () => {
    expect(new Webhook(secret, { format: 'raw' }).verify(raw, sent)).toEqual(JSON.parse(raw.toString()));
    expect(verifyStandardWebhook(raw, sent, secret)).toBe(true);
    expect(verifyStandardWebhook(raw.toString('utf8'), new Headers(sent), ['whsec_old_secret_0123456789', secret])).toBe(true);
    const upper = Object.fromEntries(Object.entries(sent).map(([k, v]) => [k.toUpperCase(), [v]]));
    expect(verifyStandardWebhook(raw, upper, secret)).toBe(true);
    expect(standardSignatureFor(raw, secret, sent['webhook-id']!, Number(sent['webhook-timestamp']))).toBe(sent['webhook-signature']);
  });

  it('accepts what the service sends for a new generated secret (the standard form), as the official library given the secret as shown does', () => {
    const generated = generateSigningSecret();
    const headers = webhookHeaders({
      url: 'https://receiver.test/hooks',
      secret: generated,
      authorization: null,
      eventType: 'crm.demand.created',
      idempotencyKey: 'crm:demand:dem_1:1',
      webhookId: crypto.randomUUID(),
      body: raw,
    });
    expect(new Webhook(generated).verify(raw, headers)).toEqual(JSON.parse(raw.toString()));
    expect(verifyStandardWebhook(raw, headers, generated)).toBe(true);
    expect(verifyStandardWebhook(raw, headers, [secret, generated])).toBe(true);
    expect(standardSignatureFor(raw, generated, headers['webhook-id']!, Number(headers['webhook-timestamp']))).toBe(
      headers['webhook-signature'],
    );
    expect(verifyWebhook(raw, headers['x-webhook-signature'], generated)).toBe(true);
    expect(verifyStandardWebhook(raw, headers, secret)).toBe(false);
  });

  it('accepts a matching signature among several', () => {
    const both = { ...sent, 'webhook-signature': `v1,AAAA ${sent['webhook-signature']}` };
    expect(verifyStandardWebhook(raw, both, secret)).toBe(true);
  });

  it('refuses a wrong secret, another body or id, missing headers, and a timestamp out of tolerance', () => {
    expect(verifyStandardWebhook(raw, sent, 'whsec_old_secret_0123456789')).toBe(false);
    expect(verifyStandardWebhook(Buffer.from(`${raw} `), sent, secret)).toBe(false);
    expect(verifyStandardWebhook(raw, { ...sent, 'webhook-id': 'other' }, secret)).toBe(false);
    expect(verifyStandardWebhook(raw, { ...sent, 'webhook-signature': undefined }, secret)).toBe(false);
    expect(verifyStandardWebhook(raw, { ...sent, 'webhook-timestamp': 'soon' }, secret)).toBe(false);
    const ts = Number(sent['webhook-timestamp']);
    expect(verifyStandardWebhook(raw, sent, secret, { nowSeconds: ts + 301 })).toBe(false);
    expect(verifyStandardWebhook(raw, sent, secret, { nowSeconds: ts + 299 })).toBe(true);
    expect(verifyStandardWebhook(raw, sent, secret, { nowSeconds: ts - 301 })).toBe(false);
  });
});
