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

/** Request headers as Node (`req.headers`) or fetch (`Headers`) give them. */
export type HeaderBag = Headers | Record<string, string | readonly string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : bag[key];
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

/** The `webhook-signature` (Standard Webhooks, v1) the service sends; the key is the UTF-8 bytes of the whole secret. */
export function standardSignatureFor(rawBody: Buffer | string, secret: string, webhookId: string, timestampSeconds: number): string {
  const hmac = crypto.createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${webhookId}.${timestampSeconds}.`, 'utf8');
  hmac.update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody);
  return `v1,${hmac.digest('base64')}`;
}

/**
 * True when the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`)
 * sign `rawBody` under any of `secrets` and the timestamp is within `toleranceSeconds` (default
 * 300) of now: the same check as the `standardwebhooks` package given the secret as a raw key.
 */
export function verifyStandardWebhook(
  rawBody: Buffer | string,
  headers: HeaderBag,
  secrets: string | readonly string[],
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): boolean {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp)) return false;
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? 300)) return false;
  const given = signatures.split(' ').map((s) => Buffer.from(s.trim(), 'utf8'));
  let match = false;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const expected = Buffer.from(standardSignatureFor(rawBody, secret, id, Number(timestamp)), 'utf8');
    for (const g of given) if (g.length === expected.length && crypto.timingSafeEqual(g, expected)) match = true;
  }
  return match;
}
