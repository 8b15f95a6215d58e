/**
 * Sending messages and their statuses. Graph: `POST /{phone_number_id}/messages` (Cloud API body,
 * answers `{ messages: [{ id }] }`) and `POST /{photoapp_account_id}/messages` (direct-message
 * body, answers `{ recipient_id, message_id }`). After a chatapp send the local provider posts
 * signed status notifications (sent, delivered, read, `statusDelayMs` apart; sent then failed for
 * a failing recipient) in the real webhook shape.
 */
import { z } from 'zod';
import { GRAPH_CODE, MEDIA_PROCESSING_SUBCODE } from '../../provider/graph-codes.js';
import { graphError, jsonBody, type LocalProviderContext, type LocalRouteModule } from './graph.js';
import { tokenCheck } from './photoapp.js';
import { chatappEnvelope } from './notify.js';
import { findPhoneNumber, newMessageId, type SentMessage } from './state.js';

const MEDIA_TYPES = ['image', 'video', 'audio', 'document', 'sticker'];
const QUICK_REPLY_LIMIT = 13;
const FEP_SECONDS = 72 * 3600;

const cloudBody = z.looseObject({ messaging_product: z.literal('whatsapp'), to: z.string().min(1), type: z.string().min(1) });
const directBody = z.looseObject({
  recipient: z.object({ id: z.string().min(1) }),
  message: z.looseObject({
    text: z.string().optional(),
    quick_replies: z.array(z.unknown()).optional(),
    attachment: z.unknown().optional(),
  }),
});

const unix = () => Math.floor(Date.now() / 1000);

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

/** The media a Cloud API body refers to by id, when it is not processed yet: the send is refused. */
function unreadyMedia(ctx: LocalProviderContext, body: Record<string, unknown>): string | undefined {
  const type = String(body.type);
  if (!MEDIA_TYPES.includes(type)) return undefined;
  const id = (body[type] as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'string') return undefined;
  const media = ctx.state.media.get(id);
  return media && !media.ready ? id : undefined;
}

export const messagesModule: LocalRouteModule = ({ graph, local }, ctx) => {
  const { state } = ctx;

  graph.post('/:senderId/messages', async (koa, next) => {
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
    koa.body = { messaging_product: 'whatsapp', contacts: [{ input: m.to, wa_id: m.to }], messages: [{ id: m.id }] };
  });

  graph.post('/:senderId/messages', async (koa) => {
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
    const refused = tokenCheck(account);
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
    koa.body = { recipient_id: m.to, message_id: m.id };
  });

  local.post('/messages/:id/fail', async (koa) => {
    const m = state.messages.get(koa.params.id!);
    if (!m) return graphError(koa, 404, GRAPH_CODE.invalidParameter, 'unknown message');
    m.failed = true;
    for (const t of m.timers) clearTimeout(t);
    koa.body = { notification_status: await postStatus(ctx, m, 'failed') };
  });

  /** Posts a given status again or out of order (tests of late and repeated statuses). */
  local.post('/messages/:id/status', async (koa) => {
    const m = state.messages.get(koa.params.id!);
    const body = await jsonBody(koa);
    if (!body) return;
    if (!m || typeof body.status !== 'string') return graphError(koa, 400, GRAPH_CODE.invalidParameter, 'unknown message or no status');
    koa.body = { notification_status: await postStatus(ctx, m, body.status, true) };
  });

  local.get('/messages/:id', (koa) => {
    const m = state.messages.get(koa.params.id!);
    if (!m) return graphError(koa, 404, GRAPH_CODE.invalidParameter, 'unknown message');
    koa.body = { id: m.id, channel: m.channel, from: m.from, to: m.to, body: m.body, statuses: m.statuses };
  });

  local.post('/recipients/:to/fail', (koa) => {
    state.failingRecipients.add(koa.params.to!);
    koa.body = { failing: [...state.failingRecipients] };
  });

  /**
   * A contact writes to a number: posts the inbound message notification. With `referral` (a
   * click-to-chat ad), it also opens the contact's free-entry-point window (72 hours).
   */
  local.post('/inbound', async (koa) => {
    const body = await jsonBody(koa);
    if (!body) return;
    const found = typeof body.phone_number_id === 'string' ? findPhoneNumber(state, body.phone_number_id) : undefined;
    if (!found || typeof body.from !== 'string')
      return graphError(koa, 400, GRAPH_CODE.invalidParameter, 'phone_number_id and from are required');
    const id = newMessageId();
    const referral = body.referral && typeof body.referral === 'object' ? body.referral : undefined;
    const value = {
      messaging_product: 'whatsapp',
      metadata: { display_phone_number: found.number.display_phone_number, phone_number_id: found.number.id },
      contacts: [{ wa_id: body.from, profile: { name: typeof body.name === 'string' ? body.name : 'Local contact' } }],
      messages: [
        {
          id,
          from: body.from,
          timestamp: String(unix()),
          type: 'text',
          text: { body: typeof body.text === 'string' ? body.text : 'Hi' },
          ...(referral ? { referral } : {}),
        },
      ],
    };
    if (referral) state.freeEntryPoints.set(body.from, unix() + FEP_SECONDS);
    const status = await ctx.notifier.postNotification('chatapp', chatappEnvelope(found.waba.id, 'messages', value, unix()));
    koa.body = { id, notification_status: status, free_entry_point_until: state.freeEntryPoints.get(body.from) ?? null };
  });

  /** Opens a free-entry-point window for a recipient, as an inbound ad-referral message would. */
  local.post('/free_entry_points', async (koa) => {
    const body = await jsonBody(koa);
    if (!body) return;
    if (typeof body.recipient !== 'string') return graphError(koa, 400, GRAPH_CODE.invalidParameter, 'recipient is required');
    const end = typeof body.expires_at === 'number' ? body.expires_at : unix() + FEP_SECONDS;
    state.freeEntryPoints.set(body.recipient, end);
    koa.body = { recipient: body.recipient, expires_at: end };
  });

  local.post('/settings', async (koa) => {
    const body = await jsonBody(koa);
    if (!body) return;
    if (typeof body.status_delay_ms === 'number') state.statusDelayMs = body.status_delay_ms;
    if (typeof body.auto_statuses === 'boolean') state.autoStatuses = body.auto_statuses;
    koa.body = { status_delay_ms: state.statusDelayMs, auto_statuses: state.autoStatuses };
  });
};
