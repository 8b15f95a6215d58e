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

/** A secret in the Standard Webhooks form: `whsec_` + canonical standard base64 of 32 bytes (with its `=`). */
const STANDARD_FORM = /^whsec_([A-Za-z0-9+/]{43}=)$/;

/**
 * The key of `webhook-signature` for `secret`, as the service chooses it: the decoded bytes of a
 * secret in the Standard Webhooks form (every secret generated now), else the UTF-8 bytes of the
 * whole secret (secrets generated before, `whsec_` + base64url, and secrets you chose).
 */
export function standardKeyFor(secret: string): Buffer {
  const encoded = STANDARD_FORM.exec(secret)?.[1];
  if (encoded !== undefined) {
    const key = Buffer.from(encoded, 'base64');
    if (key.length === 32 && key.toString('base64') === encoded) return key;
  }
  return Buffer.from(secret, 'utf8');
}

/** The `webhook-signature` (Standard Webhooks, v1) the service sends, keyed by `standardKeyFor(secret)`. */
export function standardSignatureFor(rawBody: Buffer | string, secret: string, webhookId: string, timestampSeconds: number): string {
  const hmac = crypto.createHmac('sha256', standardKeyFor(secret)).update(`${webhookId}.${timestampSeconds}.`, 'utf8');
  hmac.update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody);
  return `v1,${hmac.digest('base64')}`;
}

/**
 * True when the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`)
 * sign `rawBody` under any of `secrets` and the timestamp is within `toleranceSeconds` (default
 * 300) of now: the same check as the `standardwebhooks` package (`new Webhook(secret)` for a
 * secret in the standard form, the secret as a raw key for any other).
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
