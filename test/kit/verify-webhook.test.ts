/** verifyWebhook: HMAC-SHA256 hex over the raw bytes, keyed by the whole secret, constant time, several secrets. */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureFor, verifyWebhook } from '@webhook-platform/sdk';

const secret = 'whsec_' + crypto.randomBytes(32).toString('base64url');
const oldSecret = 'whsec_old_secret_0123456789';
// Spacing and key order a re-serialization would not keep.
const raw = Buffer.from('{"event":"crm.demand.created",  "entity_id":"dem_1","environment":"live","n":1.0}', 'utf8');
// What the service sends: computed here independently of the SDK.
const header = crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(raw).digest('hex');

describe('verifyWebhook', () => {
  it('accepts the signature of the raw bytes under the right secret, Buffer or string body', () => {
    expect(signatureFor(raw, secret)).toBe(header);
    expect(verifyWebhook(raw, header, [secret])).toBe(true);
    expect(verifyWebhook(raw.toString('utf8'), header, [secret])).toBe(true);
  });

  it('accepts any secret of a rotation list, in any order', () => {
    expect(verifyWebhook(raw, header, [oldSecret, secret])).toBe(true);
    expect(verifyWebhook(raw, signatureFor(raw, oldSecret), [oldSecret, secret])).toBe(true);
  });

  it('refuses a wrong secret, and the secret without its whsec_ prefix', () => {
    expect(verifyWebhook(raw, header, [oldSecret])).toBe(false);
    expect(verifyWebhook(raw, header, [secret.slice('whsec_'.length)])).toBe(false);
    expect(verifyWebhook(raw, header, [])).toBe(false);
  });

  it('refuses a re-serialized body', () => {
    const reserialized = JSON.stringify(JSON.parse(raw.toString('utf8')));
    expect(reserialized).not.toBe(raw.toString('utf8'));
    expect(verifyWebhook(reserialized, header, [secret])).toBe(false);
  });

  it('refuses headers of the wrong length or form without throwing', () => {
    for (const bad of [
      header.slice(0, 63),
      header + '0',
      '',
      `sha256=${header}`,
      header.toUpperCase(),
      Buffer.from(header, 'hex').toString('base64'),
    ]) {
      expect(verifyWebhook(raw, bad, [secret])).toBe(false);
    }
    expect(verifyWebhook(raw, undefined, [secret])).toBe(false);
    expect(verifyWebhook(raw, null, [secret])).toBe(false);
    // Node gives a repeated header as an array; the first value is the one judged.
    expect(verifyWebhook(raw, [header], [secret])).toBe(true);
  });
});
