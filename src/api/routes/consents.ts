/** Consent records of a contact (SPEC 3.4, 4.9): POST records one (src/crm/consents.ts), GET lists the history. */
import Router from '@koa/router';
import { notFound } from '../../core/domain-error.js';
import { pageOf, parseLimit } from '../../core/paging.js';
import { recordConsent } from '../../crm/consents.js';
import { listConsents } from '../../db/consents.js';
import { getContact } from '../../db/contacts.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { presentConsent } from '../presenters.js';
import { CreateConsentBody } from '../schemas/crm.js';
import { parseBody } from '../validation.js';
import { contactId } from './contact-profiles.js';
import { pageCursor } from './webhooks.js';

export function consentRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.post('/api/v1/contacts/:id/consents', requireScope('contacts:write'), async (ctx) => {
    const id = contactId(ctx.params.id!);
    const body = parseBody(CreateConsentBody, await readJson(ctx, 'invalid_consent'), 'invalid_consent');
    const { accountId, environment } = principalOf(ctx);
    const { record } = await recordConsent(
      deps,
      { accountId, environment },
      { contactId: id, ...body, purpose: body.purpose ?? 'marketing', origin: body.origin ?? 'api', evidence: body.evidence ?? '' },
    );
    ctx.status = 201;
    ctx.body = { data: presentConsent(record) };
  });

  router.get('/api/v1/contacts/:id/consents', requireScope('contacts:read'), async (ctx) => {
    const principal = principalOf(ctx);
    const contact = await getContact(deps.db, principal, contactId(ctx.params.id!));
    if (!contact) throw notFound('contact');
    const limit = parseLimit(ctx.query.limit);
    const after = pageCursor(ctx.query.after);
    const before = after ? undefined : pageCursor(ctx.query.before);
    const rows = await listConsents(deps.db, contact.id, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentConsent), paging };
  });

  return router;
}
