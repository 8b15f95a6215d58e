/**
 * Validation and deduplication of a broadcast's add-recipients call (SPEC 8, DECISIONS
 * "Broadcasts"). Pure: the caller stores the accepted recipients and counts those the broadcast
 * already had as duplicates too.
 */
import { isRecord } from './is-record.js';

export const MAX_RECIPIENTS_PER_CALL = 1000;
/** A phone number as people write it (`+55 (11) 98765-4321` is 19); longer is no number. */
export const MAX_TO_RECIPIENT_CHARS = 32;
/** A recipient's `components`, as compact JSON (JSON.stringify) in UTF-8: a template's parameters. */
export const MAX_COMPONENTS_BYTES = 4096;

/**
 * The body limit of POST /broadcasts/{id}/recipients: 1000 maximal items in compact JSON.
 * Envelope `{"recipients":[]}` 17 bytes; an item `{"to_recipient":"…","components":…}` is 33
 * bytes of frame + 32 (to_recipient, ASCII only) + 4096 (components) = 4161; 999 commas between
 * items. 17 + 1000 × 4161 + 999 = 4,162,016 bytes (about 3.97 MiB); the 256 KiB of other routes
 * would leave each of 1000 items 262 bytes.
 */
export const MAX_RECIPIENTS_BODY_BYTES =
  '{"recipients":[]}'.length +
  MAX_RECIPIENTS_PER_CALL * ('{"to_recipient":"","components":}'.length + MAX_TO_RECIPIENT_CHARS + MAX_COMPONENTS_BYTES) +
  (MAX_RECIPIENTS_PER_CALL - 1);

export type RecipientRefusal = 'not_an_object' | 'missing_to_recipient' | 'invalid_to_recipient' | 'invalid_components' | 'unknown_field';

export interface RecipientError {
  index: number;
  /** The value as given, when it was a string. */
  to_recipient?: string;
  reason: RecipientRefusal;
  message: string;
}

export interface AcceptedRecipient {
  index: number;
  /** Digits only, country code first: the form recipients are compared and sent in. */
  toRecipient: string;
  components: Record<string, unknown>[] | null;
}

export interface RecipientTriage {
  accepted: AcceptedRecipient[];
  /** Items repeating an earlier valid item of the same call. */
  duplicatesInCall: number;
  errors: RecipientError[];
}

/** E.164 allows at most 15 digits; fewer than 7 is no dialable international number. */
const MIN_DIGITS = 7;
const MAX_DIGITS = 15;

/**
 * The international number in digits only, or undefined when the text is not a phone number.
 * Accepts the ways people write one: `+55 (11) 98765-4321`, `55.11.98765.4321`, `005511987654321`.
 */
export function normalizePhoneNumber(raw: string): string | undefined {
  const trimmed = raw.trim();
  if (!/^(\+|00)?[\d\s().-]+$/.test(trimmed)) return undefined;
  let digits = trimmed.replace(/\D/g, '');
  // 00 is the international call prefix of most countries, the same as +.
  if (trimmed.startsWith('00')) digits = digits.slice(2);
  if (digits.length < MIN_DIGITS || digits.length > MAX_DIGITS || digits.startsWith('0')) return undefined;
  return digits;
}

/** One item's verdict: an accepted recipient or why it was refused. */
function judgeItem(item: unknown, index: number): Omit<AcceptedRecipient, 'index'> | RecipientError {
  if (!isRecord(item)) return { index, reason: 'not_an_object', message: 'a recipient is an object { to_recipient, components? }' };
  const given = item.to_recipient;
  const to = typeof given === 'string' ? { to_recipient: given } : {};
  const unknown = Object.keys(item).filter((k) => k !== 'to_recipient' && k !== 'components');
  if (unknown.length > 0) return { index, ...to, reason: 'unknown_field', message: `unknown field: ${unknown.join(', ')}` };
  if (given === undefined || given === null || given === '') {
    return { index, reason: 'missing_to_recipient', message: 'to_recipient is required' };
  }
  if (typeof given !== 'string') return { index, reason: 'invalid_to_recipient', message: 'to_recipient must be a string' };
  const toRecipient = given.length <= MAX_TO_RECIPIENT_CHARS ? normalizePhoneNumber(given) : undefined;
  if (!toRecipient) {
    return {
      index,
      ...to,
      reason: 'invalid_to_recipient',
      message: `to_recipient is not an international phone number (${MIN_DIGITS} to ${MAX_DIGITS} digits, country code first, at most ${MAX_TO_RECIPIENT_CHARS} characters)`,
    };
  }
  const components = item.components;
  if (components !== undefined && components !== null) {
    if (!Array.isArray(components)) return { index, ...to, reason: 'invalid_components', message: 'components must be an array' };
    const bad = components.findIndex((c) => !isRecord(c) || typeof c.type !== 'string' || c.type.length === 0);
    if (bad >= 0) {
      return { index, ...to, reason: 'invalid_components', message: `components[${bad}] must be an object with a type` };
    }
    if (Buffer.byteLength(JSON.stringify(components)) > MAX_COMPONENTS_BYTES) {
      return { index, ...to, reason: 'invalid_components', message: `components must be at most ${MAX_COMPONENTS_BYTES} bytes of JSON` };
    }
    return { toRecipient, components: components as Record<string, unknown>[] };
  }
  return { toRecipient, components: null };
}

/**
 * Sorts the items of one call into accepted recipients (first occurrence of each number, in
 * order), repeats of an accepted number, and errors with their index. Invalid items never stop
 * the valid ones. The caller refuses calls over MAX_RECIPIENTS_PER_CALL before this runs.
 */
export function triageRecipients(items: readonly unknown[]): RecipientTriage {
  const accepted: AcceptedRecipient[] = [];
  const errors: RecipientError[] = [];
  const seen = new Set<string>();
  let duplicatesInCall = 0;
  items.forEach((item, index) => {
    const verdict = judgeItem(item, index);
    if ('reason' in verdict) {
      errors.push(verdict);
    } else if (seen.has(verdict.toRecipient)) {
      duplicatesInCall++;
    } else {
      seen.add(verdict.toRecipient);
      accepted.push({ index, ...verdict });
    }
  });
  return { accepted, duplicatesInCall, errors };
}
