/** Broadcasts (DECISIONS "Broadcasts"): a template sent to up to many recipients of one channel account. */
import Router from '@koa/router';
import { MAX_RECIPIENTS_BODY_BYTES, MAX_RECIPIENTS_PER_CALL, triageRecipients } from '../../core/broadcast-recipients.js';
import { DomainError, notFound } from '../../core/domain-error.js';
import { isRecord } from '../../core/is-record.js';
import { pageOf, parseLimit } from '../../core/paging.js';
import {
  addRecipients,
  getBroadcast,
  insertBroadcast,
  listBroadcasts,
  listRecipients,
  startSending,
  type BroadcastRow,
  type BroadcastStatus,
  type RecipientStatus,
} from '../../db/broadcasts.js';
import { inTransaction, type Queryable } from '../../db/pool.js';
import { findStageByKey } from '../../db/stages.js';
import { findTemplate } from '../../db/templates.js';
import { sendBroadcast } from '../../channels/outbound/broadcast-send.js';
import { requireProvider } from '../../channels/provider-errors.js';
import { principalOf, requireScope, type Principal } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { presentBroadcast, presentRecipient } from '../presenters.js';
import { BROADCAST_STATUSES, CreateBroadcastBody, RECIPIENT_STATUSES } from '../schemas/account.js';
import { Uuid } from '../schemas/common.js';
import { parseBody } from '../validation.js';
import { templateChannelAccount } from './templates.js';
import { pageCursor } from './webhooks.js';

function enumFilter<T extends string>(raw: unknown, values: readonly T[]): T | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !(values as readonly string[]).includes(raw)) {
    throw new DomainError(422, 'invalid_status', `status must be one of ${values.join(', ')}`);
  }
  return raw as T;
}

/** The broadcast of the key's Account and environment; anything else is 404. */
async function broadcastOf(db: Queryable, p: Principal, raw: string, opts: { forUpdate?: boolean } = {}): Promise<BroadcastRow> {
  const row = Uuid.safeParse(raw).success ? await getBroadcast(db, p, raw, opts) : undefined;
  if (!row) throw notFound('broadcast');
  return row;
}

export function broadcastRoutes(deps: ApiDeps): Router {
  const router = new Router();
  broadcastItselfRoutes(router, deps);
  recipientAndSendRoutes(router, deps);
  return router;
}

function broadcastItselfRoutes(router: Router, deps: ApiDeps): void {
  router.post('/api/v1/broadcasts', requireScope('messages:write'), async (ctx) => {
    const principal = principalOf(ctx);
    const body = parseBody(CreateBroadcastBody, await readJson(ctx));
    const ca = await templateChannelAccount(deps, principal, body.channel_account_id);
    const template = await findTemplate(deps.db, { ...principal, wabaId: ca.waba_id, ...body.template });
    if (!template) {
      throw new DomainError(
        422,
        'unknown_template',
        `no template ${body.template.name} (${body.template.language}) on this channel account's business account; sync templates first (POST /api/v1/templates/sync)`,
      );
    }
    const replyStage = body.reply_stage === undefined ? undefined : await findStageByKey(deps.db, principal.accountId, body.reply_stage);
    if (body.reply_stage !== undefined && !replyStage) {
      throw new DomainError(422, 'invalid_stage', `reply_stage: no stage with key "${body.reply_stage}" (GET /api/v1/stages)`);
    }
    const row = await insertBroadcast(deps.db, {
      accountId: principal.accountId,
      channelAccountId: ca.id,
      environment: principal.environment,
      name: body.name ?? null,
      templateName: template.name,
      templateLanguage: template.language,
      replyStageId: replyStage?.id ?? null,
    });
    ctx.status = 201;
    ctx.body = { data: presentBroadcast(row) };
  });

  router.get('/api/v1/broadcasts', requireScope('messages:read'), async (ctx) => {
    const { accountId, environment } = principalOf(ctx);
    const q = ctx.query;
    const channelAccountId = q.channel_account_id === undefined ? undefined : String(q.channel_account_id);
    if (channelAccountId !== undefined && !Uuid.safeParse(channelAccountId).success) {
      throw new DomainError(422, 'invalid_request', 'channel_account_id must be a UUID');
    }
    const status = enumFilter<BroadcastStatus>(q.status, BROADCAST_STATUSES);
    const limit = parseLimit(q.limit);
    const after = pageCursor(q.after);
    const before = after ? undefined : pageCursor(q.before);
    const rows = await listBroadcasts(deps.db, { accountId, environment, channelAccountId, status }, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentBroadcast), paging };
  });

  router.get('/api/v1/broadcasts/:id', requireScope('messages:read'), async (ctx) => {
    ctx.body = { data: presentBroadcast(await broadcastOf(deps.db, principalOf(ctx), ctx.params.id!)) };
  });
}

function recipientAndSendRoutes(router: Router, deps: ApiDeps): void {
  router.post('/api/v1/broadcasts/:id/recipients', requireScope('messages:write'), async (ctx) => {
    const principal = principalOf(ctx);
    const body = await readJson(ctx, undefined, { limitBytes: MAX_RECIPIENTS_BODY_BYTES });
    // The body's shape first: `null` is JSON too, and has no fields to read.
    const items = isRecord(body) ? body.recipients : undefined;
    if (!isRecord(body) || !Array.isArray(items)) {
      throw new DomainError(422, 'invalid_request', 'recipients: an array of { to_recipient, components? } is required');
    }
    const unknown = Object.keys(body).filter((k) => k !== 'recipients');
    if (unknown.length > 0) throw new DomainError(422, 'invalid_request', `unknown field: ${unknown.join(', ')}`);
    if (items.length > MAX_RECIPIENTS_PER_CALL) {
      throw new DomainError(
        422,
        'too_many_recipients',
        `at most ${MAX_RECIPIENTS_PER_CALL} recipients per call; this one has ${items.length}`,
      );
    }
    const triage = triageRecipients(items);
    const added = await inTransaction(deps.db, async (tx) => {
      // Locked so a send cannot start between the check and the insert.
      const b = await broadcastOf(tx, principal, ctx.params.id!, { forUpdate: true });
      if (b.status !== 'draft')
        throw new DomainError(409, 'broadcast_not_draft', `recipients can be added only to a draft broadcast; this one is ${b.status}`);
      return addRecipients(tx, b.id, triage.accepted);
    });
    ctx.body = {
      data: {
        added,
        // Repeats within the call, and numbers the broadcast already had.
        duplicates: triage.duplicatesInCall + (triage.accepted.length - added),
        errors: triage.errors,
      },
    };
  });

  router.get('/api/v1/broadcasts/:id/recipients', requireScope('messages:read'), async (ctx) => {
    const b = await broadcastOf(deps.db, principalOf(ctx), ctx.params.id!);
    const status = enumFilter<RecipientStatus>(ctx.query.status, RECIPIENT_STATUSES);
    const limit = parseLimit(ctx.query.limit);
    const after = pageCursor(ctx.query.after);
    const before = after ? undefined : pageCursor(ctx.query.before);
    const rows = await listRecipients(deps.db, b.id, { status }, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentRecipient), paging };
  });

  router.post('/api/v1/broadcasts/:id/send', requireScope('messages:write'), async (ctx) => {
    const principal = principalOf(ctx);
    requireProvider(deps.providerApi);
    const b = await broadcastOf(deps.db, principal, ctx.params.id!);
    if (b.status === 'sent') throw new DomainError(409, 'broadcast_already_sent', 'this broadcast was sent already');
    if (b.counts.total === 0)
      throw new DomainError(422, 'no_recipients', 'add recipients before sending (POST /api/v1/broadcasts/{id}/recipients)');
    const ca = await templateChannelAccount(deps, principal, b.channel_account_id);
    const template = await findTemplate(deps.db, {
      ...principal,
      wabaId: ca.waba_id,
      name: b.template_name,
      language: b.template_language,
    });
    if (template?.status !== 'APPROVED') {
      throw new DomainError(
        409,
        'template_not_approved',
        `template ${b.template_name} (${b.template_language}) is ${template?.status ?? 'no longer listed'}; only APPROVED templates can be sent`,
      );
    }
    if (!(await startSending(deps.db, b.id))) throw new DomainError(409, 'broadcast_already_sent', 'this broadcast was sent already');
    await sendBroadcast({ db: deps.db, providerApi: deps.providerApi, secretBox: deps.secretBox, now: deps.now }, principal, b);
    ctx.body = { data: presentBroadcast((await getBroadcast(deps.db, principal, b.id))!) };
  });
}
