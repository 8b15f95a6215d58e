/** Recipients at the size limits of a broadcast's add-recipients call (src/core/broadcast-recipients.ts). */
import { MAX_COMPONENTS_BYTES, MAX_TO_RECIPIENT_CHARS } from '../../src/core/broadcast-recipients.js';

/** The i-th of distinct maximal items: a 32-character to_recipient and 4096 bytes of components. */
export function maximalRecipient(i: number, base = 5511_000_000_000) {
  // 13 digits written one by one with dashes, then dots up to the length limit: still one number.
  const digits = String(base + i);
  const to_recipient = `+${digits.split('').join('-')}`.padEnd(MAX_TO_RECIPIENT_CHARS, '.');
  const components = [{ type: 'body', parameters: [{ type: 'text', text: '' }] }];
  const text = 'x'.repeat(MAX_COMPONENTS_BYTES - Buffer.byteLength(JSON.stringify(components)));
  components[0]!.parameters[0]!.text = text;
  return { to_recipient, components };
}

/** `{"recipients":[…]}` of n maximal items, compact. */
export const recipientsBody = (n: number, base?: number) =>
  JSON.stringify({ recipients: Array.from({ length: n }, (_, i) => maximalRecipient(i, base)) });
