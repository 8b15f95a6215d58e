/** The delivery audit list: SPEC 4.7 with the fields of DECISIONS. */
import Router from '@koa/router';
import { pageOf, parseLimit } from '../../core/paging.js';
import {
  DELIVERY_STATUSES,
  endpointPacing,
  getDelivery,
  listDeliveries,
  resendDelivery,
  type AttemptRow,
  type DeliveryStatus,
} from '../../db/deliveries.js';
import { getEventDefinition } from '../../core/catalog/index.js';
import { getEndpoint } from '../../db/endpoints.js';
import { getEvent } from '../../db/events.js';
import { eventBody, shownRequest, testBody, webhookTimestampOf, type ShownRequest } from '../../delivery/send-webhook.js';
import { principalOf, requireScope } from '../auth.js';
import type { ApiDeps } from '../deps.js';
import { DomainError, notFound } from '../../core/domain-error.js';
import { presentAttempt, presentDelivery } from '../presenters.js';
import { Uuid } from '../schemas/common.js';
import { pageCursor } from './webhooks.js';

type DeliveryWithAttempts = NonNullable<Awaited<ReturnType<typeof getDelivery>>>;

/**
 * The request as signed (DECISIONS, audit list): the body rebuilt from the stored event (or, for a
 * test send, from its attempt's start) and the headers from `shownRequest`, the code the POST uses.
 * The latest attempt's headers, or before any attempt those built now; null when the event or
 * the endpoint is gone.
 */
async function signedRequestOf(deps: ApiDeps, row: DeliveryWithAttempts): Promise<SignedRequestShown | null> {
  const latest = row.attempts_log.at(-1);
  const [endpoint, body] = await Promise.all([getEndpoint(deps.db, row.account_id, row.endpoint_id), bodyOf(deps, row, latest)]);
  if (!endpoint || !body) return null;
  const shown = shownRequest(deps.secretBox, endpoint, {
    eventType: row.event_type,
    idempotencyKey: row.idempotency_key,
    webhookId: row.id,
    body,
    timestampSeconds: webhookTimestampOf(latest?.started_at ?? deps.now?.() ?? new Date()),
  });
  return { attempt: latest?.number ?? null, ...shown };
}

type SignedRequestShown = ShownRequest & { attempt: number | null };

async function bodyOf(deps: ApiDeps, row: DeliveryWithAttempts, latest: AttemptRow | undefined): Promise<Buffer | null> {
  if (row.event_id === null) return row.event_type === 'webhook.test' && latest ? testBody(latest.started_at) : null;
  const [event, def] = [await getEvent(deps.db, row.account_id, row.event_id), getEventDefinition(row.event_type)];
  return event && def ? eventBody(def, event) : null;
}

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
      deps.auditDb ?? deps.db,
      accountId,
      { endpointId, status: status as DeliveryStatus | undefined, eventType: q.event_type as string | undefined },
      { limit, after, before },
    );
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    const pacing = await endpointPacing(deps.db, items);
    ctx.body = { data: items.map((d) => presentDelivery(d, pacing.get(d.endpoint_id))), paging };
  });

  router.get('/api/v1/webhook_deliveries/:id', requireScope('webhooks:read'), async (ctx) => {
    const id = ctx.params.id!;
    const row = Uuid.safeParse(id).success ? await getDelivery(deps.db, principalOf(ctx).accountId, id) : undefined;
    if (!row) throw notFound('delivery');
    const [pacing, request] = await Promise.all([endpointPacing(deps.db, [row]), signedRequestOf(deps, row)]);
    ctx.body = {
      data: { ...presentDelivery(row, pacing.get(row.endpoint_id)), attempts_log: row.attempts_log.map(presentAttempt), request },
    };
  });

  router.post('/api/v1/webhook_deliveries/:id/resend', requireScope('webhooks:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const id = ctx.params.id!;
    if (!Uuid.safeParse(id).success) throw notFound('delivery');
    const result = await resendDelivery(deps.db, accountId, id);
    // The endpoint's workflow sends it, or holds it if the endpoint is not sending.
    deps.wakes.add(result.endpoint_id, accountId);
    const pacing = await endpointPacing(deps.db, [result]);
    ctx.body = { data: presentDelivery(result, pacing.get(result.endpoint_id)) };
  });

  return router;
}
