/** The delivery audit list: SPEC 4.7 with the fields of DECISIONS. */
import Router from '@koa/router';
import { pageOf, parseLimit } from '../../core/paging.js';
import {
  DELIVERY_STATUSES,
  endpointPacing,
  getDelivery,
  listDeliveries,
  resendDelivery,
  type DeliveryStatus,
} from '../../db/deliveries.js';
import { principalOf, requireScope } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { DomainError, notFound } from '../../core/domain-error.js';
import { presentAttempt, presentDelivery } from '../presenters.js';
import { Uuid } from '../schemas/common.js';
import { pageCursor } from './webhooks.js';

export function deliveryRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/api/v1/webhook_deliveries', requireScope('webhooks:read'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const q = ctx.query;
    const status = q.status as string | undefined;
    if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status)) {
      throw new DomainError(422, 'invalid_status', `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    }
    const endpointId = (q.endpoint_id ?? q.webhook_id) as string | undefined;
    if (endpointId !== undefined && !Uuid.safeParse(endpointId).success) {
      throw new DomainError(422, 'invalid_request', 'endpoint_id must be a UUID');
    }
    const limit = parseLimit(q.limit);
    const after = pageCursor(q.after);
    const before = after ? undefined : pageCursor(q.before);
    const rows = await listDeliveries(
      deps.db,
      accountId,
      { endpointId, status: status as DeliveryStatus | undefined, eventType: q.event_type as string | undefined },
      { limit, after, before },
    );
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    const pacing = await endpointPacing(
      deps.db,
      items.map((d) => d.endpoint_id),
    );
    ctx.body = { data: items.map((d) => presentDelivery(d, pacing.get(d.endpoint_id))), paging };
  });

  router.get('/api/v1/webhook_deliveries/:id', requireScope('webhooks:read'), async (ctx) => {
    const id = ctx.params.id!;
    const row = Uuid.safeParse(id).success ? await getDelivery(deps.db, principalOf(ctx).accountId, id) : undefined;
    if (!row) throw notFound('delivery');
    const pacing = await endpointPacing(deps.db, [row.endpoint_id]);
    ctx.body = { data: { ...presentDelivery(row, pacing.get(row.endpoint_id)), attempts_log: row.attempts_log.map(presentAttempt) } };
  });

  router.post('/api/v1/webhook_deliveries/:id/resend', requireScope('webhooks:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const id = ctx.params.id!;
    if (!Uuid.safeParse(id).success) throw notFound('delivery');
    const result = await resendDelivery(deps.db, accountId, id);
    // The endpoint's workflow sends it, or holds it if the endpoint is not sending.
    deps.wakes.add(result.endpoint_id, accountId);
    const pacing = await endpointPacing(deps.db, [result.endpoint_id]);
    ctx.body = { data: presentDelivery(result, pacing.get(result.endpoint_id)) };
  });

  return router;
}
