/**
 * Sending messages and their statuses. Graph: `POST /{phone_number_id}/messages` (Cloud API body,
 * answers `{ messages: [{ id }] }`) and `POST /{photoapp_account_id}/messages` (direct-message
 * body, answers `{ recipient_id, message_id }`). After a chatapp send the local provider posts
 * signed status notifications (sent, delivered, read, `statusDelayMs` apart; sent then failed for
 * a failing recipient) in the real webhook shape.
 */
import type { RouterMiddleware } from '@koa/router';
import { z } from 'zod';
import { GRAPH_CODE, MEDIA_PROCESSING_SUBCODE } from '../../src/core/graph-codes.js';
import { bearerOf, graphError, jsonBody, type LocalProviderContext, type LocalRouteModule } from './graph.js';
import { tokenCheck } from './photoapp.js';
import { chatappEnvelope } from './notify.js';
import { findPhoneNumber, newMessageId, type SentMessage } from './state.js';

const MEDIA_TYPES = ['image', 'video', 'audio', 'document', 'sticker'];
const QUICK_REPLY_LIMIT = 13;
export const FEP_SECONDS = 72 * 3600;

const cloudBody = z.looseObject({ messaging_product: z.literal('whatsapp'), to: z.string().min(1), type: z.string().min(1) });
const directBody = z.looseObject({
  recipient: z.object({ id: z.string().min(1) }),
  message: z.looseObject({
    text: z.string().optional(),
    quick_replies: z.array(z.unknown()).optional(),
    attachment: z.unknown().optional(),
  }),
});

export const unix = () => Math.floor(Date.now() / 1000);

/** The status object of the webhook (`value.statuses[]`), priced like graph API 24. */
function statusObject(ctx: LocalProviderContext, m: SentMessage, status: string): Record<string, unknown> {
  const base = { id: m.id, status, timestamp: String(unix()), recipient_id: m.to };
  if (status === 'failed') {
    return {
      ...base,
      errors: [
        {
          code: GRAPH_CODE.undeliverable,
          title: 'Message undeliverable',
          message: 'Message undeliverable',
          error_data: { details: 'The recipient cannot receive this message.' },
        },
      ],
    };
  }
  const fepEnd = ctx.state.freeEntryPoints.get(m.to);
  if (fepEnd !== undefined && fepEnd > unix()) {
    return {
      ...base,
      conversation: {
        id: `conv-${m.to}`,
        ...(status === 'sent' ? { expiration_timestamp: String(fepEnd) } : {}),
        origin: { type: 'referral_conversion' },
      },
      pricing: { billable: false, pricing_model: 'PMP', category: 'referral_conversion', type: 'free_entry_point' },
    };
  }
  const category = (m.body as { type?: string }).type === 'template' ? 'utility' : 'service';
  return { ...base, pricing: { billable: category !== 'service', pricing_model: 'PMP', category, type: 'regular' } };
}

/** Posts one status notification of a chatapp message; each status at most once. */
export async function postStatus(ctx: LocalProviderContext, m: SentMessage, status: string, force = false): Promise<number> {
  if (!force && m.statuses.includes(status)) return 200;
  m.statuses.push(status);
  const number = findPhoneNumber(ctx.state, m.from)?.number;
  const value = {
    messaging_product: 'whatsapp',
    metadata: { display_phone_number: number?.display_phone_number ?? '', phone_number_id: m.from },
    statuses: [statusObject(ctx, m, status)],
  };
  return ctx.notifier.postNotification('chatapp', chatappEnvelope(m.waba_id ?? '', 'messages', value, unix()));
}

/** Schedules sent → delivered → read (or sent → failed), `statusDelayMs` apart. */
function scheduleStatuses(ctx: LocalProviderContext, m: SentMessage): void {
  if (!ctx.state.autoStatuses) return;
  const steps = m.failed ? ['sent', 'failed'] : ['sent', 'delivered', 'read'];
  const delay = ctx.state.statusDelayMs;
  // One chain, so the platform sees them in order even if a notification is slow.
  let chain: Promise<unknown> = Promise.resolve();
  steps.forEach((status, i) => {
    m.timers.push(
      setTimeout(
        () => {
          chain = chain.then(() => (status !== 'failed' && m.statuses.includes('failed') ? 0 : postStatus(ctx, m, status)));
        },
        delay * (i + 1),
      ),
    );
  });
}

/** A send already taken waits `answerDelayMs` before its answer (the platform may give up first). */
async function answerLate(ctx: LocalProviderContext): Promise<void> {
  if (ctx.state.answerDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, ctx.state.answerDelayMs));
}

/** The media a Cloud API body refers to by id, when it is not processed yet: the send is refused. */
function unreadyMedia(ctx: LocalProviderContext, body: Record<string, unknown>): string | undefined {
  const type = String(body.type);
  if (!MEDIA_TYPES.includes(type)) return undefined;
  const id = (body[type] as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'string') return undefined;
  const media = ctx.state.media.get(id);
  return media && !media.ready ? id : undefined;
}

/** `POST /{phone_number_id}/messages`: the Cloud API send; not a number of ours, the next route (photoapp) answers. */
function chatappSend(ctx: LocalProviderContext): RouterMiddleware {
  const { state } = ctx;
  return async (koa, next) => {
    const senderId = koa.params.senderId!;
    const found = findPhoneNumber(state, senderId);
    if (!found) return next(); // a photoapp account, below
    if (koa.state.token !== ctx.accessToken) return graphError(koa, 401, GRAPH_CODE.oauth, 'Invalid OAuth access token');
    const body = await jsonBody(koa);
    if (!body) return;
    const parsed = cloudBody.safeParse(body);
    if (!parsed.success) {
      return graphError(
        koa,
        400,
        GRAPH_CODE.invalidParameter,
        `(#100) Invalid parameter: ${parsed.error.issues[0]?.path.join('.')}`,
        undefined,
        'OAuthException',
      );
    }
    if (Array.isArray((body as { quick_replies?: unknown }).quick_replies)) {
      return graphError(koa, 400, GRAPH_CODE.invalidParameter, '(#100) Param quick_replies is not supported on this channel');
    }
    const pending = unreadyMedia(ctx, body);
    if (pending) {
      return graphError(
        koa,
        400,
        GRAPH_CODE.mediaNotReady,
        `(#131053) Media upload error: media ${pending} is still processing`,
        MEDIA_PROCESSING_SUBCODE,
      );
    }
    const m: SentMessage = {
      id: newMessageId(),
      channel: 'chatapp',
      from: senderId,
      waba_id: found.waba.id,
      to: parsed.data.to,
      body,
      statuses: [],
      failed: state.failingRecipients.has(parsed.data.to),
      timers: [],
    };
    state.messages.set(m.id, m);
    scheduleStatuses(ctx, m);
    await answerLate(ctx);
    koa.body = { messaging_product: 'whatsapp', contacts: [{ input: m.to, wa_id: m.to }], messages: [{ id: m.id }] };
  };
}

/** `POST /{photoapp_account_id}/messages`: the direct-message send. */
function photoappSend(ctx: LocalProviderContext): RouterMiddleware {
  const { state } = ctx;
  return async (koa) => {
    const account = state.photoappAccounts.get(koa.params.senderId!);
    if (!account) {
      return graphError(
        koa,
        400,
        GRAPH_CODE.invalidParameter,
        `Unsupported post request. Object with ID '${koa.params.senderId}' does not exist`,
        33,
        'GraphMethodException',
      );
    }
    const refused = tokenCheck(account, bearerOf(koa));
    if (refused) return graphError(koa, 400, GRAPH_CODE.oauth, refused.message, refused.subcode);
    const body = await jsonBody(koa);
    if (!body) return;
    const parsed = directBody.safeParse(body);
    if (!parsed.success)
      return graphError(koa, 400, GRAPH_CODE.invalidParameter, `(#100) Invalid parameter: ${parsed.error.issues[0]?.path.join('.')}`);
    if ((parsed.data.message.quick_replies?.length ?? 0) > QUICK_REPLY_LIMIT) {
      return graphError(koa, 400, GRAPH_CODE.invalidParameter, `(#100) At most ${QUICK_REPLY_LIMIT} quick replies`);
    }
    const attachmentId = (parsed.data.message.attachment as { payload?: { attachment_id?: unknown } } | undefined)?.payload?.attachment_id;
    if (typeof attachmentId === 'string' && state.media.get(attachmentId)?.ready === false) {
      return graphError(koa, 400, GRAPH_CODE.mediaNotReady, `Media ${attachmentId} is still processing`, MEDIA_PROCESSING_SUBCODE);
    }
    const m: SentMessage = {
      id: `m_${newMessageId().slice(6)}`,
      channel: 'photoapp',
      from: account.id,
      waba_id: null,
      to: parsed.data.recipient.id,
      body,
      statuses: [],
      failed: false,
      timers: [],
    };
    state.messages.set(m.id, m);
    await answerLate(ctx);
    koa.body = { recipient_id: m.to, message_id: m.id };
  };
}

export const messagesModule: LocalRouteModule = ({ graph }, ctx) => {
  graph.post('/:senderId/messages', chatappSend(ctx), photoappSend(ctx));
};
