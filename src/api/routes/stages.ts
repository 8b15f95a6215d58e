/** Funnel stages of the Account: configuring them emits no event (SPEC 6.4); deleting one moves its contacts out (src/crm/stage-deletion.ts). */
import Router from '@koa/router';
import { notFound } from '../../core/domain-error.js';
import { pageOf, parseLimit } from '../../core/paging.js';
import { inTransaction } from '../../db/pool.js';
import { insertStage, listStages } from '../../db/stages.js';
import { deleteStageMovingContacts } from '../../crm/stage-deletion.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { presentStage } from '../presenters.js';
import { Uuid } from '../schemas/common.js';
import { CreateStageBody } from '../schemas/crm.js';
import { parseBody } from '../validation.js';
import { pageCursor } from './webhooks.js';

export function stageRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.post('/api/v1/stages', requireScope('contacts:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const body = parseBody(CreateStageBody, await readJson(ctx), 'invalid_stage');
    const row = await inTransaction(deps.db, (tx) => insertStage(tx, { accountId, key: body.key, label: body.label }));
    ctx.status = 201;
    ctx.body = { data: presentStage(row) };
  });

  router.get('/api/v1/stages', requireScope('contacts:read'), async (ctx) => {
    const limit = parseLimit(ctx.query.limit);
    const after = pageCursor(ctx.query.after);
    const before = after ? undefined : pageCursor(ctx.query.before);
    const rows = await listStages(deps.db, principalOf(ctx).accountId, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentStage), paging };
  });

  router.delete('/api/v1/stages/:id', requireScope('contacts:write'), async (ctx) => {
    const id = ctx.params.id!;
    if (!Uuid.safeParse(id).success) throw notFound('stage');
    await deleteStageMovingContacts(deps, principalOf(ctx).accountId, id);
    ctx.status = 204;
  });

  return router;
}
