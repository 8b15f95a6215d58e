/**
 * The send request of `POST /api/v1/messages` and the provider bodies it becomes. Pure: the
 * rules of a message (DECISIONS "Quick replies", per-type fields) live here, so the route and
 * every other sender (broadcasts) refuse the same things with the same words.
 */
import { z } from 'zod';
import { DomainError } from './domain-error.js';

/** Quick replies exist on photoapp only, at most this many per direct message (SPEC 8). */
export const MAX_QUICK_REPLIES = 13;
export const MEDIA_TYPES = ['image', 'video', 'audio', 'document'] as const;
export const MESSAGE_TYPES = ['text', 'template', ...MEDIA_TYPES] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];
export type Channel = 'chatapp' | 'photoapp';

const QuickReply = z.strictObject({ title: z.string().trim().min(1).max(20), payload: z.string().max(1000).optional() });

export const SendMessageRequest = z.strictObject({
  channel_account_id: z.uuid(),
  /** chatapp: the recipient's phone number (digits, `+` and separators allowed); photoapp: the scoped user id. */
  to: z.string().trim().min(1).max(64),
  type: z.enum(MESSAGE_TYPES),
  text: z.strictObject({ body: z.string().min(1).max(4096), preview_url: z.boolean().optional() }).optional(),
  template: z
    .strictObject({
      name: z.string().min(1).max(512),
      language: z.string().min(1).max(15),
      components: z.array(z.record(z.string(), z.unknown())).max(20).optional(),
    })
    .optional(),
  media: z
    .strictObject({
      id: z.string().min(1).max(256).optional(),
      link: z
        .url({ protocol: /^https$/ })
        .max(2048)
        .optional(),
      caption: z.string().max(1024).optional(),
      filename: z.string().max(240).optional(),
    })
    .optional(),
  quick_replies: z.array(QuickReply).optional(),
});
export type SendMessageRequest = z.infer<typeof SendMessageRequest>;

const invalid = (message: string) => new DomainError(422, 'invalid_message', message);

/** Parses a send request; every refusal is 422 `invalid_message` naming the field. */
export function parseSendRequest(body: unknown): SendMessageRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('request body must be a JSON object');
  const result = SendMessageRequest.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') throw invalid(`unknown field: ${issue.keys.join(', ')}`);
    const field = issue.path.map(String).join('.');
    throw invalid(field ? `${field}: ${issue.message}` : issue.message);
  }
  const r = result.data;
  const isMedia = (MEDIA_TYPES as readonly string[]).includes(r.type);
  const needs: Record<string, boolean> = { text: r.type === 'text', template: r.type === 'template', media: isMedia };
  for (const [field, wanted] of Object.entries(needs)) {
    const given = r[field as 'text' | 'template' | 'media'] !== undefined;
    if (wanted && !given) throw invalid(`${field}: required for type ${r.type}`);
    if (!wanted && given) throw invalid(`${field}: not allowed for type ${r.type}`);
  }
  if (r.media && (r.media.id === undefined) === (r.media.link === undefined)) throw invalid('media: give exactly one of id or link');
  if (r.media?.filename !== undefined && r.type !== 'document') throw invalid('media.filename: only for type document');
  return r;
}

/** The rules that depend on the channel of the account sending; the recipient as the provider wants it. */
export function checkForChannel(r: SendMessageRequest, channel: Channel): { to: string } {
  if (r.quick_replies !== undefined) {
    if (channel !== 'photoapp') throw invalid('quick_replies: only photoapp channel accounts support quick replies');
    if (r.quick_replies.length > MAX_QUICK_REPLIES) throw invalid(`quick_replies: at most ${MAX_QUICK_REPLIES} per message`);
  }
  if (channel === 'photoapp') {
    if (r.type === 'template') throw invalid('type: template messages exist on chatapp only');
    if (r.media?.caption !== undefined) throw invalid('media.caption: photoapp media has no caption');
    return { to: r.to };
  }
  if (!/^\+?[\d\s().-]+$/.test(r.to)) throw invalid('to: must be a phone number in international format');
  const digits = r.to.replace(/\D/g, '');
  if (digits.length < 7 || digits.length > 15) throw invalid('to: must be a phone number of 7 to 15 digits');
  return { to: digits };
}

/** The Cloud API body of `POST /{phone_number_id}/messages`. */
export function chatappBody(r: SendMessageRequest, to: string): Record<string, unknown> {
  const base = { messaging_product: 'whatsapp', recipient_type: 'individual', to, type: r.type };
  if (r.type === 'text') return { ...base, text: { body: r.text!.body, preview_url: r.text!.preview_url ?? false } };
  if (r.type === 'template') {
    const t = r.template!;
    return { ...base, template: { name: t.name, language: { code: t.language }, ...(t.components ? { components: t.components } : {}) } };
  }
  const m = r.media!;
  return {
    ...base,
    [r.type]: {
      ...(m.id ? { id: m.id } : { link: m.link }),
      ...(m.caption !== undefined && r.type !== 'audio' ? { caption: m.caption } : {}),
      ...(m.filename !== undefined ? { filename: m.filename } : {}),
    },
  };
}

const ATTACHMENT_TYPE: Record<string, string> = { image: 'image', video: 'video', audio: 'audio', document: 'file' };

/** The direct-message body of `POST /{photoapp_account_id}/messages`. */
export function photoappBody(r: SendMessageRequest, to: string): Record<string, unknown> {
  const message: Record<string, unknown> = {};
  if (r.type === 'text') message.text = r.text!.body;
  else {
    const m = r.media!;
    message.attachment = { type: ATTACHMENT_TYPE[r.type], payload: m.id ? { attachment_id: m.id } : { url: m.link } };
  }
  if (r.quick_replies?.length) {
    message.quick_replies = r.quick_replies.map((q) => ({ content_type: 'text', title: q.title, payload: q.payload ?? q.title }));
  }
  return { recipient: { id: to }, messaging_type: 'RESPONSE', message };
}

/** What the platform keeps of the content it sent (the message row's `content`). */
export function storedContent(r: SendMessageRequest): Record<string, unknown> {
  const { channel_account_id: _ca, to: _to, type: _type, ...content } = r;
  return content;
}
