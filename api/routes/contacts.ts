/** Contact deletion: its events leave the stream (SPEC 6.5 rule 6). */
import Router from '@koa/router';
import { deleteEventsWhere } from '../../db/events.js';
import { deleteContact } from '../../db/messaging.js';
import { inTransaction } from '../../db/pool.js';
import { principalOf, requireScope } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { notFound } from '../../core/domain-error.js';

export function contactRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.delete('/api/v1/contacts/:id', requireScope('contacts:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const id = ctx.params.id!;
    const found = await inTransaction(deps.db, async (tx) => {
      const events = await deleteEventsWhere(tx, { accountId, contactRef: id });
      const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
      const contact = isUuid ? await deleteContact(tx, accountId, id) : false;
      return contact || events > 0;
    });
    if (!found) throw notFound('contact');
    ctx.status = 204;
  });
  return router;
}
