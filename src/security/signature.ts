import crypto from 'node:crypto';

/** `X-Webhook-Signature`: lowercase hex HMAC-SHA256 of the exact body bytes, keyed by the whole secret string. */
export function signBody(secret: string, body: Buffer | string): string {
  return crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
}

/** A secret in the Standard Webhooks form: `whsec_` + canonical standard base64 of 32 bytes (with its `=`). */
const STANDARD_FORM = /^whsec_([A-Za-z0-9+/]{43}=)$/;

/**
 * The key of the Standard Webhooks `webhook-signature`. A secret in the standard form (every secret
 * generated now) is keyed by its decoded bytes, as the standard's libraries do with `new
 * Webhook(secret)`. Any other secret keeps the UTF-8 bytes of the whole string, the same key as
 * `X-Webhook-Signature`: secrets generated before were `whsec_` + 43 base64url characters, which
 * this form never matches (no `=`), so their receivers (a raw key) keep verifying; a chosen one
 * need not be base64 at all.
 */
export function standardWebhookKey(secret: string): Buffer {
  const encoded = STANDARD_FORM.exec(secret)?.[1];
  if (encoded !== undefined) {
    const key = Buffer.from(encoded, 'base64');
    // Canonical only (the last character's unused bits zero): what the libraries' decoders agree on.
    if (key.length === 32 && key.toString('base64') === encoded) return key;
  }
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

/** `whsec_` followed by 32 random bytes in standard base64: the Standard Webhooks form, so its libraries take it as shown. */
export function generateSigningSecret(): string {
  return `whsec_${crypto.randomBytes(32).toString('base64')}`;
}
