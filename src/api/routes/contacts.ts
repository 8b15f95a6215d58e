/** Contact deletion: its events leave the stream (SPEC 6.5 rule 6). */
import Router from '@koa/router';
import { deleteEventsWhere } from '../../db/events.js';
import { deleteContact, getContactEnvironment } from '../../db/messaging.js';
import { inTransaction } from '../../db/pool.js';
import { principalOf, requireScope } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { notFound } from '../../core/domain-error.js';

export function contactRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.delete('/api/v1/contacts/:id', requireScope('contacts:write'), async (ctx) => {
    // The key's environment only: a contact belongs to its channel account's environment, events to theirs.
    const { accountId, environment } = principalOf(ctx);
    const id = ctx.params.id!;
    const found = await inTransaction(deps.db, async (tx) => {
      const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
      const home = isUuid ? await getContactEnvironment(tx, accountId, id) : undefined;
      // A contact of the other environment is not this key's to see: 404, and nothing of it is deleted.
      if (home !== undefined && home !== environment) return false;
      const events = await deleteEventsWhere(tx, { accountId, environment, contactRef: id });
      const contact = home !== undefined && (await deleteContact(tx, accountId, environment, id));
      return contact || events > 0;
    });
    if (!found) throw notFound('contact');
    ctx.status = 204;
  });
  return router;
}
