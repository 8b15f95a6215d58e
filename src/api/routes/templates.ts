/**
 * Message templates (SPEC 4.9, 6.4): read from the stored copy, which a sync refreshes from the
 * provider and the provider's status notifications keep current.
 */
import Router from '@koa/router';
import { DomainError, notFound } from '../../core/domain-error.js';
import { pageOf, parseLimit } from '../../core/paging.js';
import { getChannelAccountOfAccount, type ChannelAccount } from '../../db/directory.js';
import { listTemplates } from '../../db/templates.js';
import { requireProvider } from '../../channels/provider-errors.js';
import { syncWabaTemplates } from '../../channels/outbound/template-sync.js';
import { principalOf, requireScope, type Principal } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { presentTemplate } from '../presenters.js';
import { SyncTemplatesBody, TEMPLATE_STATUSES } from '../schemas/account.js';
import { Uuid } from '../schemas/common.js';
import { parseBody } from '../validation.js';
import { pageCursor } from './webhooks.js';

/**
 * The channel account when it is the key's Account AND environment (else 404, never 403), and
 * a chatapp one with a business account: templates belong to a waba.
 */
export async function templateChannelAccount(
  deps: ApiDeps,
  principal: Principal,
  raw: unknown,
): Promise<ChannelAccount & { waba_id: string }> {
  const ca =
    typeof raw === 'string' && Uuid.safeParse(raw).success
      ? await getChannelAccountOfAccount(deps.db, principal.accountId, raw)
      : undefined;
  if (!ca || ca.environment !== principal.environment) throw notFound('channel account');
  if (ca.channel !== 'chatapp' || !ca.waba_id) {
    throw new DomainError(422, 'invalid_channel_account', 'templates exist only for chatapp channel accounts with a business account');
  }
  return ca as ChannelAccount & { waba_id: string };
}

function statusFilter(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  const status = typeof raw === 'string' ? raw.toUpperCase() : '';
  if (!(TEMPLATE_STATUSES as readonly string[]).includes(status)) {
    throw new DomainError(422, 'invalid_status', `status must be one of ${TEMPLATE_STATUSES.join(', ')}`);
  }
  return status;
}

export function templateRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/api/v1/templates', requireScope('account:read'), async (ctx) => {
    const principal = principalOf(ctx);
    const q = ctx.query;
    const ca = q.channel_account_id === undefined ? undefined : await templateChannelAccount(deps, principal, q.channel_account_id);
    const status = statusFilter(q.status);
    const name = typeof q.name === 'string' ? q.name : undefined;
    const limit = parseLimit(q.limit);
    const after = pageCursor(q.after);
    const before = after ? undefined : pageCursor(q.before);
    const rows = await listTemplates(
      deps.db,
      { accountId: principal.accountId, environment: principal.environment, wabaId: ca?.waba_id, status, name },
      { limit, after, before },
    );
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    ctx.body = { data: items.map(presentTemplate), paging };
  });

  router.post('/api/v1/templates/sync', requireScope('account:write'), async (ctx) => {
    const principal = principalOf(ctx);
    const body = parseBody(SyncTemplatesBody, await readJson(ctx));
    const ca = await templateChannelAccount(deps, principal, body.channel_account_id);
    const provider = requireProvider(deps.providerApi);
    const synced = await syncWabaTemplates(deps.db, provider, {
      accountId: principal.accountId,
      environment: principal.environment,
      wabaId: ca.waba_id,
    });
    ctx.body = {
      data: {
        channel_account_id: ca.id,
        waba_id: ca.waba_id,
        templates: synced.count,
        updated: synced.upserted,
        removed: synced.removed,
        synced_at: new Date().toISOString(),
      },
    };
  });

  return router;
}
