/**
 * Reading and editing contacts (SPEC 4.9): list, one, PATCH (profile fields, metadata, funnel
 * stage). Only a stage change emits an event (src/crm/contact-stage.ts). Deletion is in contacts.ts.
 */
import Router from '@koa/router';
import { DomainError, notFound } from '../../core/domain-error.js';
import { pageOf, parseLimit } from '../../core/paging.js';
import { editContact } from '../../crm/contact-stage.js';
import { getContact, listContacts } from '../../db/contacts.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { presentContact } from '../presenters.js';
import { Uuid } from '../schemas/common.js';
import { UpdateContactBody } from '../schemas/crm.js';
import { parseBody } from '../validation.js';
import { pageCursor } from './webhooks.js';

/** A path id that is not a UUID names no contact: 404, like another Account's. */
export function contactId(raw: string): string {
  if (!Uuid.safeParse(raw).success) throw notFound('contact');
  return raw;
}

/** A UUID filter of a list; anything else is refused rather than matching nothing. */
export function uuidFilter(name: string, raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !Uuid.safeParse(raw).success) throw new DomainError(422, 'invalid_request', `${name} must be a UUID`);
  return raw;
}

export function contactProfileRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/api/v1/contacts', requireScope('contacts:read'), async (ctx) => {
    const q = ctx.query;
    const limit = parseLimit(q.limit);
    const after = pageCursor(q.after);
    const before = after ? undefined : pageCursor(q.before);
    const filter = {
      channelAccountId: uuidFilter('channel_account_id', q.channel_account_id),
      stageKey: typeof q.stage === 'string' ? q.stage : undefined,
      waId: typeof q.wa_id === 'string' ? q.wa_id : undefined,
    };
    const rows = await listContacts(deps.db, principalOf(ctx), filter, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentContact), paging };
  });

  router.get('/api/v1/contacts/:id', requireScope('contacts:read'), async (ctx) => {
    const row = await getContact(deps.db, principalOf(ctx), contactId(ctx.params.id!));
    if (!row) throw notFound('contact');
    ctx.body = { data: presentContact(row) };
  });

  router.patch('/api/v1/contacts/:id', requireScope('contacts:write'), async (ctx) => {
    const id = contactId(ctx.params.id!);
    const body = parseBody(UpdateContactBody, await readJson(ctx));
    const { accountId, environment } = principalOf(ctx);
    const { contact } = await editContact(
      deps,
      { accountId, environment },
      { contactId: id, stageKey: body.stage, changedBy: 'manual', profileName: body.profile_name, metadata: body.metadata },
    );
    ctx.body = { data: presentContact(contact) };
  });

  return router;
}
