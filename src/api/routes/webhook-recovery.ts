/**
 * Bulk recovery of an endpoint's deliveries: the failed, exhausted and limited ones of a time
 * window go back to `pending`, and the endpoint's workflow sends them at the pace its health
 * allows, exactly as it sends a manual resend.
 */
import Router from '@koa/router';
import { DomainError, notFound } from '../../core/domain-error.js';
import { RECOVERABLE_STATUSES, recoverDeliveries } from '../../db/deliveries.js';
import { getEndpoint } from '../../db/endpoints.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { Uuid } from '../schemas/common.js';
import { RecoverBody } from '../schemas/webhooks.js';

const invalid = (message: string) => new DomainError(422, 'invalid_recovery', message);

/** The body as a window and a status list; every refusal is 422 `invalid_recovery` naming the field. */
export function parseRecovery(body: unknown, now: Date) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('request body must be a JSON object');
  const result = RecoverBody.safeParse(body);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') throw invalid(`unknown field: ${issue.keys.join(', ')}`);
    const field = issue.path.map(String).join('.');
    const hint = field === 'since' || field === 'until' ? ' (an ISO 8601 timestamp with a zone, e.g. 2026-11-22T10:00:00Z)' : '';
    throw invalid(`${field || 'body'}: ${issue.message}${hint}`);
  }
  const since = new Date(result.data.since);
  const until = result.data.until === undefined ? now : new Date(result.data.until);
  if (since.getTime() > until.getTime()) throw invalid('since: must not be after until');
  const asked = new Set(result.data.statuses ?? RECOVERABLE_STATUSES);
  return { since, until, statuses: RECOVERABLE_STATUSES.filter((s) => asked.has(s)) };
}

export function webhookRecoveryRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.post('/api/v1/webhooks/:id/recover', requireScope('webhooks:write'), async (ctx) => {
    const { accountId, environment } = principalOf(ctx);
    const id = ctx.params.id!;
    if (!Uuid.safeParse(id).success) throw notFound('webhook endpoint');
    const body = await readJson(ctx, 'invalid_recovery');
    const endpoint = await getEndpoint(deps.db, accountId, id);
    if (!endpoint) throw notFound('webhook endpoint');
    const { since, until, statuses } = parseRecovery(body, new Date());
    const recovered = await recoverDeliveries(deps.db, { accountId, endpointId: id, environment, since, until, statuses });
    // The endpoint's workflow sends them, paced by its health, or holds them if it is not sending.
    if (recovered > 0) deps.wakes.add(endpoint.id, accountId);
    ctx.body = { data: { recovered, since: since.toISOString(), until: until.toISOString(), statuses } };
  });

  return router;
}
