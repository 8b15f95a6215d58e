/**
 * Setup links (DECISIONS "Setup links"): created and listed per Customer with an API key, and the
 * public completion route the Customer's browser calls at the end of the provider's embedded
 * signup, authenticated by the link's secret token instead of an API key.
 */
import Router from '@koa/router';
import { DomainError, notFound } from '../../core/domain-error.js';
import { pageOf, parseLimit } from '../../core/paging.js';
import { getCustomerOfAccount } from '../../db/directory.js';
import { insertSetupLink, listSetupLinks } from '../../db/setup-links.js';
import { completeSignup, newSetupToken, openSetupLink } from '../../channels/embedded-signup.js';
import { completePhotoappLogin } from '../../channels/photoapp-login.js';
import { requireProvider } from '../../channels/provider-errors.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { presentSetupLink } from '../presenters.js';
import { CompleteSignupBody, CreateSetupLinkBody, SETUP_LINK_DEFAULT_TTL_S } from '../schemas/account.js';
import { Uuid } from '../schemas/common.js';
import { parseBody } from '../validation.js';
import { pageCursor } from './webhooks.js';

export function setupLinkRoutes(deps: ApiDeps): Router {
  const router = new Router();
  const now = () => deps.now?.() ?? new Date();

  /** The Customer when it is one of the key's Account; another Account's is 404. */
  async function customerOf(accountId: string, raw: string): Promise<string> {
    if (!Uuid.safeParse(raw).success || !(await getCustomerOfAccount(deps.db, accountId, raw))) throw notFound('customer');
    return raw;
  }

  router.post('/api/v1/customers/:id/setup_links', requireScope('account:write'), async (ctx) => {
    const { accountId, environment } = principalOf(ctx);
    const body = parseBody(CreateSetupLinkBody, await readJson(ctx));
    const customerId = await customerOf(accountId, ctx.params.id!);
    const { token, hash } = newSetupToken();
    const row = await insertSetupLink(deps.db, {
      accountId,
      customerId,
      environment,
      channel: body.channel ?? 'chatapp',
      connectionMode: body.connection_mode ?? 'dedicated',
      tokenHash: hash,
      expiresAt: new Date(now().getTime() + (body.expires_in ?? SETUP_LINK_DEFAULT_TTL_S) * 1000),
    });
    ctx.status = 201;
    // The page lives on this API's own origin (behind a proxy, the forwarded one when trustProxy is set).
    ctx.body = { data: { ...presentSetupLink(row, now()), url: `${ctx.protocol}://${ctx.host}/setup/${token}` } };
  });

  router.get('/api/v1/customers/:id/setup_links', requireScope('account:read'), async (ctx) => {
    const { accountId, environment } = principalOf(ctx);
    const customerId = await customerOf(accountId, ctx.params.id!);
    const limit = parseLimit(ctx.query.limit);
    const after = pageCursor(ctx.query.after);
    const before = after ? undefined : pageCursor(ctx.query.before);
    const rows = await listSetupLinks(deps.db, { accountId, customerId, environment }, { limit, after, before });
    const { items, paging } = pageOf(rows, limit, before ? 'before' : 'after', Boolean(after || before));
    const at = now();
    ctx.body = { data: items.map((r) => presentSetupLink(r, at)), paging };
  });

  return router;
}

/** Routes without an API key: the link's token is the credential. */
export function setupCompletionRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.post('/setup/:token/complete', async (ctx) => {
    const body = parseBody(CompleteSignupBody, await readJson(ctx));
    const now = deps.now?.() ?? new Date();
    const link = await openSetupLink(deps, ctx.params.token!, now);
    const provider = requireProvider(deps.providerApi);
    const { appSecret } = deps.provider;
    if (link.channel === 'photoapp') {
      // The provider's login names the account itself: a business account or number says nothing here.
      if (body.waba_id !== undefined || body.phone_number_id !== undefined) {
        throw new DomainError(422, 'invalid_request', 'a photoapp setup link takes only the code');
      }
      ctx.body = {
        data: await completePhotoappLogin({ db: deps.db, provider, secretBox: deps.secretBox, appSecret }, link, body.code, now),
      };
      return;
    }
    ctx.body = { data: await completeSignup({ db: deps.db, wakes: deps.wakes, now: deps.now, provider, appSecret }, link, body, now) };
  });
  return router;
}
