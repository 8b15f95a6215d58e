import type { EndpointId } from '../../core/ids.js';
/** Webhook endpoints: SPEC 4.1 to 4.6 with the state effects of SPEC 3.2. */
import Router from '@koa/router';
import { normalizeCategories } from '../../core/categories.js';
import { afterTest, planPatch } from '../../core/health.js';
import { decodePageKey, pageOf, parseLimit } from '../../core/paging.js';
import { getCustomerOfAccount } from '../../db/directory.js';
import { recordTestDelivery } from '../../db/deliveries.js';
import { newRowId } from '../../db/row-id.js';
import { endpointHourlyStats } from '../../db/endpoint-hourly-stats.js';
import { hourStatsOf } from '../../core/hourly-stats.js';
import {
  getEndpoint,
  insertEndpoint,
  listEndpoints,
  recordTestFailure,
  recordVerification,
  softDeleteEndpoint,
  updateEndpoint,
} from '../../db/endpoints.js';
import { inTransaction } from '../../db/pool.js';
import { sendToEndpoint, testBody, webhookTimestampOf } from '../../delivery/send-webhook.js';
import { webhookSends } from '../../runtime/metrics.js';
import { notifyAfterCommit } from '../../delivery/workflow-client.js';
import { endpointSnapshot } from '../../delivery/endpoint-snapshot.js';
import { urlRefusal } from '../../security/destination-policy.js';
import { generateSigningSecret } from '../../security/signature.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { DomainError, notFound } from '../../core/domain-error.js';
import { presentEndpoint } from '../presenters.js';
import { Uuid } from '../schemas/common.js';
import { CreateEndpointBody, UpdateEndpointBody } from '../schemas/webhooks.js';
import { parseBody } from '../validation.js';

const STATS_HOURS = 24;

export function pageCursor(raw: unknown): ReturnType<typeof decodePageKey> | undefined {
  if (raw === undefined) return undefined;
  const key = typeof raw === 'string' ? decodePageKey(raw) : undefined;
  if (!key) throw new DomainError(422, 'invalid_cursor', 'cursor is not one this API issued');
  return key;
}

async function checkUrl(policy: ApiDeps['policy'], url: string) {
  const why = await urlRefusal(policy, url);
  if (why) throw new DomainError(422, 'invalid_url', why);
}

function checkEvents(events: readonly unknown[]) {
  const categories = normalizeCategories(events);
  if (categories.length === 0)
    throw new DomainError(422, 'invalid_events', 'events has no valid category (messages, statuses, crm, account, app_messages)');
  return categories;
}

async function checkCustomer(db: ApiDeps['db'], accountId: string, customerId: string | null | undefined) {
  if (!customerId) return;
  if (!(await getCustomerOfAccount(db, accountId, customerId))) {
    throw new DomainError(422, 'invalid_customer_id', 'customer_id is not a Customer of this Account');
  }
}

/** The path's endpoint id, or 404 when it cannot be one. */
function endpointId(raw: string): EndpointId {
  if (!Uuid.safeParse(raw).success) throw notFound('webhook endpoint');
  return raw as EndpointId;
}

export function webhookRoutes(deps: ApiDeps): Router {
  const router = new Router();
  createAndReadRoutes(router, deps);
  patchAndDeleteRoutes(router, deps);
  testRoute(router, deps);
  return router;
}

function createAndReadRoutes(router: Router, deps: ApiDeps): void {
  const { db, secretBox, policy } = deps;
  router.post('/api/v1/webhooks', requireScope('webhooks:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const body = parseBody(CreateEndpointBody, await readJson(ctx));
    const events = checkEvents(body.events);
    await checkUrl(policy, body.url);
    await checkCustomer(db, accountId, body.customer_id);
    const secret = body.secret ?? generateSigningSecret();
    const row = await inTransaction(db, (tx) =>
      insertEndpoint(tx, {
        accountId,
        customerId: body.customer_id ?? null,
        url: body.url,
        events,
        active: body.active ?? true,
        secretCiphertext: secretBox.seal(secret),
        rateLimit: body.rate_limit ?? null,
        description: body.description || null,
        limit: deps.config.endpointLimit,
      }),
    );
    await notifyAfterCommit(deps.workflows, row.id, accountId, 'created', { url: row.url, created: endpointSnapshot(row) });
    ctx.status = 201;
    ctx.body = { data: { ...presentEndpoint(row), secret } };
  });

  router.get('/api/v1/webhooks', requireScope('webhooks:read'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const limit = parseLimit(ctx.query.limit);
    const after = pageCursor(ctx.query.after);
    const before = after ? undefined : pageCursor(ctx.query.before);
    const rows = await listEndpoints(db, accountId, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentEndpoint), paging };
  });

  router.get('/api/v1/webhooks/:id', requireScope('webhooks:read'), async (ctx) => {
    const row = await getEndpoint(db, principalOf(ctx).accountId, endpointId(ctx.params.id!));
    if (!row) throw notFound('webhook endpoint');
    ctx.body = { data: presentEndpoint(row) };
  });

  // The console's chart: a fixed 24-hour window, read from the endpoint's hourly rollups (never its deliveries).
  router.get('/api/v1/webhooks/:id/stats', requireScope('webhooks:read'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const id = endpointId(ctx.params.id!);
    // One statement: the endpoint's existence in the Account is checked with the read.
    const counts = await endpointHourlyStats(db, accountId, id, STATS_HOURS);
    if (!counts) throw notFound('webhook endpoint');
    const hours = counts.map(hourStatsOf);
    ctx.body = { data: { since: hours[0]!.hour, hours } };
  });
}

function patchAndDeleteRoutes(router: Router, deps: ApiDeps): void {
  const { db, secretBox, policy } = deps;
  router.patch('/api/v1/webhooks/:id', requireScope('webhooks:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const id = endpointId(ctx.params.id!);
    const body = parseBody(UpdateEndpointBody, await readJson(ctx));
    // Checks that need the network run before the transaction so no row lock waits on DNS.
    if (body.url !== undefined) await checkUrl(policy, body.url);
    const events = body.events !== undefined ? checkEvents(body.events) : undefined;
    await checkCustomer(db, accountId, body.customer_id);

    const { row, changed } = await inTransaction(db, async (tx) => {
      const current = await getEndpoint(tx, accountId, id, { forUpdate: true });
      if (!current) throw notFound('webhook endpoint');
      const plan = planPatch(
        {
          url: current.url,
          events: current.events,
          active: current.active,
          customerId: current.customer_id,
          secret: secretBox.open(current.secret_ciphertext),
          authorization: current.authorization_ciphertext ? secretBox.open(current.authorization_ciphertext) : null,
        },
        {
          url: body.url,
          events,
          active: body.active,
          customerId: body.customer_id,
          secret: body.secret,
          authorization: body.headers?.Authorization,
        },
      );
      if (plan.refused) {
        throw new DomainError(
          409,
          'verification_required',
          'reactivate an endpoint by sending a test (POST /api/v1/webhooks/{id}/test) that gets a 2xx answer',
        );
      }
      const { changes } = plan;
      // The throttle is no part of health: the session reads it before each POST.
      const rateLimit = body.rate_limit !== undefined && body.rate_limit !== current.rate_limit ? body.rate_limit : undefined;
      // A label only, no part of health or sending: "" and null both remove it.
      const description =
        body.description !== undefined && (body.description || null) !== current.description ? body.description || null : undefined;
      if (Object.keys(changes).length === 0 && rateLimit === undefined && description === undefined)
        return { row: current, changed: false };
      const updated = await updateEndpoint(tx, accountId, id, {
        url: changes.url,
        events: changes.events,
        active: changes.active,
        customerId: changes.customerId,
        secretCiphertext: changes.secret === undefined ? undefined : secretBox.seal(changes.secret),
        authorizationCiphertext:
          changes.authorization === undefined ? undefined : changes.authorization === null ? null : secretBox.seal(changes.authorization),
        rateLimit,
        description,
        invalidateVerification: plan.invalidatesVerification,
        clearNextAttempt: plan.stopsSending,
      });
      return { row: updated!, changed: true };
    });
    if (changed) await notifyAfterCommit(deps.workflows, id, accountId, 'updated', { url: row.url });
    ctx.body = { data: presentEndpoint(row) };
  });

  router.delete('/api/v1/webhooks/:id', requireScope('webhooks:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const id = endpointId(ctx.params.id!);
    if (!(await softDeleteEndpoint(db, accountId, id))) throw notFound('webhook endpoint');
    await notifyAfterCommit(deps.workflows, id, accountId, 'deleted');
    ctx.status = 204;
  });
}

function testRoute(router: Router, deps: ApiDeps): void {
  const { db, secretBox } = deps;
  router.post('/api/v1/webhooks/:id/test', requireScope('webhooks:write'), async (ctx) => {
    const { accountId } = principalOf(ctx);
    const id = endpointId(ctx.params.id!);
    const endpoint = await getEndpoint(db, accountId, id);
    if (!endpoint) throw notFound('webhook endpoint');
    const startedAt = new Date();
    const body = testBody(startedAt);
    // Each test send is its own delivery row, and its id is its webhook-id.
    const deliveryId = newRowId();
    const outcome = await sendToEndpoint(deps.httpClient, secretBox, endpoint, {
      eventType: 'webhook.test',
      idempotencyKey: `test:${endpoint.id}`,
      webhookId: deliveryId,
      body,
      timestampSeconds: webhookTimestampOf(startedAt),
    });
    webhookSends.inc({ kind: 'test', outcome: outcome.acknowledged ? 'success' : (outcome.error ?? 'failure') });
    await recordTestDelivery(db, {
      id: deliveryId,
      accountId,
      endpointId: id,
      attempt: {
        startedAt,
        durationMs: outcome.durationMs,
        responseCode: outcome.recordedStatus,
        error: outcome.error,
        responseExcerpt: outcome.excerpt,
      },
    });
    if (!outcome.acknowledged) {
      await recordTestFailure(db, id, outcome.recordedStatus);
      throw new DomainError(
        502,
        'test_delivery_failed',
        `test delivery failed: ${outcome.error}${outcome.errorMessage ? ` (${outcome.errorMessage})` : ''}`,
      );
    }
    // Verifies only the configuration read before the POST: a url or Authorization PATCHed meanwhile stays unverified.
    const result = await recordVerification(db, id, endpoint.config_version, outcome.recordedStatus!, afterTest(true)!);
    if (!result) throw notFound('webhook endpoint');
    if (result.verified) await notifyAfterCommit(deps.workflows, id, accountId, 'verified', { url: result.row.url });
    const { row } = result;
    ctx.body = {
      data: { success: true, response_code: outcome.recordedStatus!, health_status: row.health_status, active: row.active },
    };
  });
}
