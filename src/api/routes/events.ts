/** Publishing events (DECISIONS) and reading the durable stream (SPEC 4.8, 6.5). */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { parseStreamAfter, parseStreamLimit, streamPaging } from '../../core/stream-paging.js';
import { getEvent, readStream } from '../../db/events.js';
import { publishEvent } from '../../events/publish.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { DomainError, notFound } from '../../core/domain-error.js';
import { Uuid } from '../schemas/common.js';
import { presentStreamItem, streamPageBytes } from '../presenters.js';

/**
 * POST /api/v1/events, the hot route, in a router of its own that the app mounts ahead of the
 * others with the same guards (`guards`: authentication, rate limit, input checks), so a publish
 * is matched against one path instead of every route of ~20 routers.
 */
export function publishRoutes(deps: ApiDeps, guards: Middleware[]): Router {
  const router = new Router();
  router.post('/api/v1/events', ...guards, requireScope('events:write'), async (ctx) => {
    const principal = principalOf(ctx);
    const body = await readJson(ctx, 'invalid_event');
    const stored = await publishEvent({ db: deps.db, wakes: deps.wakes, now: deps.now }, principal, body);
    // A repeat of a known event stores nothing and answers with the first one.
    ctx.status = stored.created ? 201 : 200;
    ctx.body = { data: presentStreamItem(stored.event) };
  });
  return router;
}

export function eventRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/api/v1/events', requireScope('events:read'), async (ctx) => {
    const { accountId, environment } = principalOf(ctx);
    const after = parseStreamAfter(ctx.query.after);
    if (after === undefined) throw new DomainError(422, 'invalid_cursor', 'after must be a non-negative integer');
    const limit = parseStreamLimit(ctx.query.limit);
    const { rows, hasMore } = await readStream(deps.db, accountId, environment, after, limit);
    const paging = streamPaging(
      after,
      rows.map((r) => String(r.cursor)),
      hasMore,
    );
    // Written as bytes: each item's data already is JSON (readStream), not parsed only to be written again.
    ctx.type = 'application/json';
    ctx.body = streamPageBytes(rows, paging);
  });

  // One event of the key's Account and environment; any other id (another tenant's included) is 404.
  router.get('/api/v1/events/:id', requireScope('events:read'), async (ctx) => {
    const { accountId, environment } = principalOf(ctx);
    const id = ctx.params.id!;
    const row = Uuid.safeParse(id).success ? await getEvent(deps.db, accountId, id, environment) : undefined;
    if (!row) throw notFound('event');
    ctx.body = { data: presentStreamItem(row) };
  });

  return router;
}
