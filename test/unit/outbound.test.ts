/** The pure rules of sending: the request, channel rules, provider bodies, token status, forward-only statuses. */
import { describe, expect, it } from 'vitest';
import { chatappBody, checkForChannel, MAX_QUICK_REPLIES, parseSendRequest, photoappBody } from '../../src/core/outbound-message.js';
import { freeEntryPointEndOf, movesForward } from '../../src/core/message-status.js';
import { blocksSending, judgeToken, tokenStatusOfSubcode } from '../../src/core/token-status.js';
import { DomainError } from '../../src/core/domain-error.js';

const CA = '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918';
const text = { channel_account_id: CA, to: '+55 11 99999-8888', type: 'text', text: { body: 'hi' } };

function refusal(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    return err as DomainError;
  }
  throw new Error('expected a refusal');
}

describe('send request', () => {
  it('normalizes a chatapp recipient to digits and builds the Cloud API body', () => {
    const r = parseSendRequest(text);
    const { to } = checkForChannel(r, 'chatapp');
    expect(to).toBe('5511999998888');
    expect(chatappBody(r, to)).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to,
      type: 'text',
      text: { body: 'hi', preview_url: false },
    });
  });

  it(`quick replies: ${MAX_QUICK_REPLIES} on photoapp pass, ${MAX_QUICK_REPLIES + 1} or any on chatapp are invalid_message`, () => {
    const qr = (n: number) =>
      parseSendRequest({ ...text, to: 'igsid', quick_replies: Array.from({ length: n }, (_, i) => ({ title: `t${i}` })) });
    expect(() => checkForChannel(qr(13), 'photoapp')).not.toThrow();
    expect(photoappBody(qr(13), 'igsid')).toMatchObject({ recipient: { id: 'igsid' }, message: { text: 'hi' } });
    expect(refusal(() => checkForChannel(qr(14), 'photoapp'))).toMatchObject({ status: 422, code: 'invalid_message' });
    expect(refusal(() => checkForChannel(qr(1), 'chatapp')).message).toContain('quick_replies');
  });

  it('names the failing field', () => {
    expect(refusal(() => parseSendRequest({ ...text, text: undefined })).message).toMatch(/^text/);
    expect(refusal(() => parseSendRequest({ ...text, type: 'template', text: undefined })).message).toMatch(/^template/);
    expect(refusal(() => parseSendRequest([])).code).toBe('invalid_message');
    expect(refusal(() => checkForChannel(parseSendRequest({ ...text, to: '12' }), 'chatapp')).message).toMatch(/^to/);
    expect(
      refusal(() =>
        checkForChannel(
          parseSendRequest({ ...text, type: 'template', text: undefined, template: { name: 'a', language: 'en' } }),
          'photoapp',
        ),
      ).message,
    ).toMatch(/^type/);
  });
});

describe('token status', () => {
  const now = new Date('2026-11-22T10:00:00Z');
  const at = (days: number) => Math.floor(now.getTime() / 1000) + days * 86_400;
  it('valid tokens are ok, or expiring within 7 days; past their date expired', () => {
    expect(judgeToken({ is_valid: true, expires_at: at(8) }, now).status).toBe('ok');
    expect(judgeToken({ is_valid: true, expires_at: at(7) }, now).status).toBe('expiring');
    expect(judgeToken({ is_valid: true, expires_at: 0 }, now)).toEqual({ status: 'ok', expiresAt: null });
    expect(judgeToken({ is_valid: true, expires_at: at(-1) }, now).status).toBe('expired');
    expect(judgeToken({}, now).status).toBe('unknown');
  });
  it('invalid tokens by subcode; only expired, invalid and revoked block sending', () => {
    expect(judgeToken({ is_valid: false, error: { code: 190, subcode: 463 } }, now).status).toBe('expired');
    expect(tokenStatusOfSubcode(458)).toBe('revoked');
    expect(tokenStatusOfSubcode(460)).toBe('revoked');
    expect(tokenStatusOfSubcode(467)).toBe('invalid');
    expect(['ok', 'expiring', 'expired', 'invalid', 'revoked', 'unknown'].filter((s) => blocksSending(s as never))).toEqual([
      'expired',
      'invalid',
      'revoked',
    ]);
  });
});

describe('message statuses', () => {
  it('move forward only; failed at any point, nothing after failed', () => {
    expect(movesForward('queued', 'sent')).toBe(true);
    expect(movesForward('sent', 'read')).toBe(true);
    expect(movesForward('read', 'delivered')).toBe(false);
    expect(movesForward('read', 'read')).toBe(false);
    expect(movesForward('read', 'failed')).toBe(true);
    expect(movesForward('failed', 'read')).toBe(false);
    expect(movesForward(null, 'sent')).toBe(true);
  });

  it('freeEntryPointEndOf reads the window end of a payload: sent with free_entry_point pricing only', () => {
    const fep = { type: 'free_entry_point' };
    const conversation = { id: 'c', expiration_timestamp: '1795428000' };
    expect(freeEntryPointEndOf({ status: 'sent', pricing: fep, conversation })).toBe('2026-11-23T10:00:00.000Z');
    expect(freeEntryPointEndOf({ status: 'delivered', pricing: fep, conversation })).toBeNull();
    expect(freeEntryPointEndOf({ status: 'sent', pricing: { type: 'regular' }, conversation })).toBeNull();
    expect(freeEntryPointEndOf({ status: 'sent', pricing: null, conversation })).toBeNull();
    expect(freeEntryPointEndOf({ status: 'sent', pricing: fep })).toBeNull();
  });
});
