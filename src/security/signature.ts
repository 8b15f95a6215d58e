import crypto from 'node:crypto';

/** `X-Webhook-Signature`: lowercase hex HMAC-SHA256 of the exact body bytes, keyed by the whole secret string. */
export function signBody(secret: string, body: Buffer | string): string {
  return crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
}

/**
 * The key of the Standard Webhooks `webhook-signature`: the UTF-8 bytes of the whole secret string,
 * prefix included, the same key as `X-Webhook-Signature`. The standard's libraries would
 * base64-decode what follows `whsec_`, but a generated secret is base64url (its `-` and `_` are
 * refused by their decoders) and a chosen one need not be base64 at all, so the raw bytes are
 * the one key every secret has; receivers give it to the library as a raw key (docs/delivery.md).
 */
export function standardWebhookKey(secret: string): Buffer {
  return Buffer.from(secret, 'utf8');
}

/**
 * `webhook-signature` as the Standard Webhooks specification defines it: `v1,` and the base64
 * HMAC-SHA256, keyed by `key`, of `<webhook-id>.<webhook-timestamp>.<body>` (body as sent).
 */
export function standardWebhookSignature(key: Uint8Array, id: string, timestampSeconds: number, body: Buffer | string): string {
  const hmac = crypto.createHmac('sha256', key).update(`${id}.${timestampSeconds}.`, 'utf8');
  hmac.update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return `v1,${hmac.digest('base64')}`;
}

/** Constant-time check of a hex HMAC-SHA256, e.g. the provider's `sha256=<hex>` header. */
export function verifyHmacHex(secret: string, body: Buffer, givenHex: string): boolean {
  const expected = crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest();
  if (!/^[0-9a-fA-F]{64}$/.test(givenHex)) return false;
  return crypto.timingSafeEqual(expected, Buffer.from(givenHex, 'hex'));
}

/** `whsec_` followed by 32 random bytes in base64url. */
export function generateSigningSecret(): string {
  return `whsec_${crypto.randomBytes(32).toString('base64url')}`;
}
