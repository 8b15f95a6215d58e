/**
 * Test control of messages: fail one, post a status again or out of order, read what was sent,
 * make a recipient fail, let a contact write (an ad referral opens a free-entry-point window),
 * and the pace of automatic statuses. Under /_local only.
 */
import { GRAPH_CODE } from '../../provider/graph-codes.js';
import { graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { FEP_SECONDS, postStatus, unix } from './messages.js';
import { chatappEnvelope } from './notify.js';
import { findPhoneNumber, newMessageId } from './state.js';

export const messageControlModule: LocalRouteModule = ({ local }, ctx) => {
  const { state } = ctx;

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
