/**
 * Test control of messages: fail one, post a status again or out of order, read what was sent,
 * make a recipient fail, open a free-entry-point window, and the pace of automatic statuses. Under /_local only.
 */
import { GRAPH_CODE } from '../../src/core/graph-codes.js';
import { graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { FEP_SECONDS, postStatus, unix } from './messages.js';

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
    if (typeof body.answer_delay_ms === 'number') state.answerDelayMs = body.answer_delay_ms;
    koa.body = { status_delay_ms: state.statusDelayMs, auto_statuses: state.autoStatuses, answer_delay_ms: state.answerDelayMs };
  });
};
