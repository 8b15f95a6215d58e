/** Channel accounts (scope account:read), isolated by the key's Account and environment. */
import Router from '@koa/router';
import { pageOf, parseLimit } from '../../core/paging.js';
import { getChannelAccountFor, listChannelAccounts } from '../../db/channel-accounts.js';
import { principalOf, requireScope } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { DomainError, notFound } from '../../core/domain-error.js';
import { presentChannelAccount } from '../presenters.js';
import { Uuid } from '../schemas/common.js';
import { pageCursor } from './webhooks.js';

export function channelAccountRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/api/v1/channel_accounts', requireScope('account:read'), async (ctx) => {
    const principal = principalOf(ctx);
    const limit = parseLimit(ctx.query.limit);
    const after = pageCursor(ctx.query.after);
    const before = after ? undefined : pageCursor(ctx.query.before);
    const { channel, customer_id: customerId } = ctx.query;
    if (channel !== undefined && channel !== 'chatapp' && channel !== 'photoapp') {
      throw new DomainError(422, 'invalid_request', 'channel must be chatapp or photoapp');
    }
    if (customerId !== undefined && (typeof customerId !== 'string' || !Uuid.safeParse(customerId).success)) {
      throw new DomainError(422, 'invalid_customer_id', 'customer_id must be a UUID');
    }
    const rows = await listChannelAccounts(deps.db, principal, { limit, after, before, channel, customerId });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    const now = deps.now?.() ?? new Date();
    ctx.body = { data: items.map((r) => presentChannelAccount(r, now)), paging };
  });

  router.get('/api/v1/channel_accounts/:id', requireScope('account:read'), async (ctx) => {
    const id = ctx.params.id!;
    const row = Uuid.safeParse(id).success ? await getChannelAccountFor(deps.db, principalOf(ctx), id) : undefined;
    if (!row) throw notFound('channel account');
    ctx.body = { data: presentChannelAccount(row, deps.now?.() ?? new Date()) };
  });

  return router;
}
