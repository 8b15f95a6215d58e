/** Webhook signature verification (SPEC 5): HMAC-SHA256, lowercase hex, over the raw body bytes. */
import crypto from 'node:crypto';

/** The X-Webhook-Signature value the service sends for `rawBody` signed with `secret`. */
export function signatureFor(rawBody: Buffer | string, secret: string): string {
  // The key is the UTF-8 bytes of the whole secret, `whsec_` prefix included.
  return crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(rawBody).digest('hex');
}

/**
 * True when `signatureHeader` is the signature of `rawBody` under any of `secrets`; pass the
 * old and the new secret while rotating. `rawBody` must be the bytes as received: a body parsed
 * and serialized again does not verify.
 */
export function verifyWebhook(
  rawBody: Buffer | string,
  signatureHeader: string | readonly string[] | null | undefined,
  secrets: string | readonly string[],
): boolean {
  const header = Array.isArray(signatureHeader) ? signatureHeader[0] : signatureHeader;
  if (typeof header !== 'string') return false;
  const given = Buffer.from(header.trim(), 'utf8');
  let match = false;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const expected = Buffer.from(signatureFor(rawBody, secret), 'utf8');
    // timingSafeEqual throws on unequal lengths; a length mismatch reveals nothing about the secret.
    if (given.length === expected.length && crypto.timingSafeEqual(given, expected)) match = true;
  }
  return match;
}
