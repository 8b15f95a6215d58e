/** Messages of the key's Account and environment, newest first: the message_resource_id of stream items (read only). */
import Router from '@koa/router';
import { DomainError } from '../../core/domain-error.js';
import { pageOf, parseLimit } from '../../core/paging.js';
import { listMessages } from '../../db/messaging-reads.js';
import { principalOf, requireScope } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { presentMessage } from '../presenters.js';
import { uuidFilter } from './contact-profiles.js';
import { pageCursor } from './webhooks.js';

const DIRECTIONS = ['inbound', 'outbound'];

export function messageRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.get('/api/v1/messages', requireScope('messages:read'), async (ctx) => {
    const q = ctx.query;
    if (q.direction !== undefined && !DIRECTIONS.includes(q.direction as string))
      throw new DomainError(422, 'invalid_request', 'direction must be inbound or outbound');
    const limit = parseLimit(q.limit);
    const after = pageCursor(q.after);
    const before = after ? undefined : pageCursor(q.before);
    const filter = {
      conversationId: uuidFilter('conversation_id', q.conversation_id),
      contactId: uuidFilter('contact_id', q.contact_id),
      channelAccountId: uuidFilter('channel_account_id', q.channel_account_id),
      direction: q.direction as string | undefined,
    };
    const rows = await listMessages(deps.db, principalOf(ctx), filter, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentMessage), paging };
  });
  return router;
}
