import crypto from 'node:crypto';

/** `X-Webhook-Signature`: lowercase hex HMAC-SHA256 of the exact body bytes, keyed by the whole secret string. */
export function signBody(secret: string, body: Buffer | string): string {
  return crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
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
