import { describe, expect, it } from 'vitest';
import {
  MAX_COMPONENTS_BYTES,
  MAX_RECIPIENTS_BODY_BYTES,
  MAX_TO_RECIPIENT_CHARS,
  normalizePhoneNumber,
  triageRecipients,
} from '../../src/core/broadcast-recipients.js';
import { maximalRecipient, recipientsBody } from '../support/broadcast-bodies.js';

describe('normalizePhoneNumber', () => {
  it('reduces the usual ways of writing a number to its digits', () => {
    expect(normalizePhoneNumber('+55 (11) 98765-4321')).toBe('5511987654321');
    expect(normalizePhoneNumber('5511987654321')).toBe('5511987654321');
    expect(normalizePhoneNumber('55.11.98765.4321')).toBe('5511987654321');
    expect(normalizePhoneNumber('005511987654321')).toBe('5511987654321');
    expect(normalizePhoneNumber(' +1 555 010 9999 ')).toBe('15550109999');
  });

  it('refuses what is not an international number', () => {
    expect(normalizePhoneNumber('abc')).toBeUndefined();
    expect(normalizePhoneNumber('+55 11 9876x4321')).toBeUndefined();
    expect(normalizePhoneNumber('123456')).toBeUndefined(); // 6 digits
    expect(normalizePhoneNumber('1234567890123456')).toBeUndefined(); // 16 digits
    expect(normalizePhoneNumber('011987654321')).toBeUndefined(); // national form, no country code
    expect(normalizePhoneNumber('')).toBeUndefined();
    expect(normalizePhoneNumber('++5511987654321')).toBeUndefined();
  });

  it('keeps the E.164 bounds: 7 and 15 digits', () => {
    expect(normalizePhoneNumber('1234567')).toBe('1234567');
    expect(normalizePhoneNumber('123456789012345')).toBe('123456789012345');
  });
});

describe('triageRecipients', () => {
  it('keeps valid items, reports invalid ones with their index, and counts repeats once', () => {
    const out = triageRecipients([
      { to_recipient: '+55 11 98765-4321' },
      { to_recipient: 'not a phone' },
      { components: [] },
      { to_recipient: '5511987654321' }, // the first one again, written differently
      { to_recipient: '+1 555 010 9999', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }] }] },
      { to_recipient: '15550108888', components: 'body' },
      'a string',
      { to_recipient: 15550107777 },
      { to_recipient: '15550106666', components: [{ parameters: [] }] },
      { to_recipient: '15550105555', extra: 1 },
      { to_recipient: '5511987654321' },
    ]);
    expect(out.accepted).toEqual([
      { index: 0, toRecipient: '5511987654321', components: null },
      { index: 4, toRecipient: '15550109999', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }] }] },
    ]);
    expect(out.duplicatesInCall).toBe(2);
    expect(out.errors.map((e) => [e.index, e.reason, e.to_recipient])).toEqual([
      [1, 'invalid_to_recipient', 'not a phone'],
      [2, 'missing_to_recipient', undefined],
      [5, 'invalid_components', '15550108888'],
      [6, 'not_an_object', undefined],
      [7, 'invalid_to_recipient', undefined],
      [8, 'invalid_components', '15550106666'],
      [9, 'unknown_field', '15550105555'],
    ]);
    for (const e of out.errors) expect(e.message.length).toBeGreaterThan(0);
  });

  it('an invalid item does not hide a later valid repeat of itself from the count', () => {
    const out = triageRecipients([{ to_recipient: 'x' }, { to_recipient: '15550109999' }, { to_recipient: '15550109999' }]);
    expect(out.accepted).toHaveLength(1);
    expect(out.duplicatesInCall).toBe(1);
    expect(out.errors).toHaveLength(1);
  });

  it('takes an empty list', () => {
    expect(triageRecipients([])).toEqual({ accepted: [], duplicatesInCall: 0, errors: [] });
  });
});

describe('the size of a recipient, and of 1000 of them', () => {
  it('to_recipient of 32 characters is taken, 33 is invalid_to_recipient', () => {
    const item = maximalRecipient(0);
    expect(item.to_recipient).toHaveLength(MAX_TO_RECIPIENT_CHARS);
    expect(triageRecipients([item]).accepted).toHaveLength(1);
    const longer = triageRecipients([{ to_recipient: `${item.to_recipient}.` }]);
    expect(longer.errors.map((e) => e.reason)).toEqual(['invalid_to_recipient']);
  });

  it('components of 4096 bytes of JSON are taken, 4097 are invalid_components', () => {
    const item = maximalRecipient(0);
    expect(Buffer.byteLength(JSON.stringify(item.components))).toBe(MAX_COMPONENTS_BYTES);
    const over = structuredClone(item);
    (over.components[0]!.parameters as { text: string }[])[0]!.text += 'x';
    expect(triageRecipients([over]).errors.map((e) => e.reason)).toEqual(['invalid_components']);
  });

  it('the body limit of the recipients route is exactly 1000 maximal items in compact JSON', () => {
    expect(Buffer.byteLength(recipientsBody(1000))).toBe(MAX_RECIPIENTS_BODY_BYTES);
    expect(MAX_RECIPIENTS_BODY_BYTES).toBe(4_162_016);
  });
});
