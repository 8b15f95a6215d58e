/** Conversations of the key's Account and environment, newest first (read only). */
import Router from '@koa/router';
import { pageOf, parseLimit } from '../../core/paging.js';
import { listConversations } from '../../db/messaging-reads.js';
import { principalOf, requireScope } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { presentConversation } from '../presenters.js';
import { uuidFilter } from './contact-profiles.js';
import { pageCursor } from './webhooks.js';

export function conversationRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/api/v1/conversations', requireScope('messages:read'), async (ctx) => {
    const q = ctx.query;
    const limit = parseLimit(q.limit);
    const after = pageCursor(q.after);
    const before = after ? undefined : pageCursor(q.before);
    const filter = {
      contactId: uuidFilter('contact_id', q.contact_id),
      channelAccountId: uuidFilter('channel_account_id', q.channel_account_id),
    };
    const rows = await listConversations(deps.db, principalOf(ctx), filter, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentConversation), paging };
  });
  return router;
}
