/**
 * Photoapp accounts and their tokens. Graph: `GET /{account_id}?fields=token_info` answers the
 * account's token like the provider's debug-token read (`{ is_valid, expires_at, error }`).
 * Control: `POST /_local/photoapp_accounts` creates one; `POST /_local/photoapp_accounts/{id}/token_status`
 * sets its token status (`ok`, `expired`, `invalid`, `revoked`) and expiry.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import { GRAPH_CODE, TOKEN_SUBCODE } from '../../src/core/graph-codes.js';
import { graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { newNumericId, type PhotoappAccount } from './state.js';

const tokenStatus = z.enum(['ok', 'expiring', 'expired', 'invalid', 'revoked']);
const accountInput = z.object({
  id: z.string().optional(),
  token_status: tokenStatus.optional(),
  /** Unix seconds; null for a token that does not expire. */
  expires_at: z.number().int().nullable().optional(),
});

const unix = () => Math.floor(Date.now() / 1000);

/** Why the account's token cannot be used now (Graph code 190 with this subcode), or undefined. */
export function tokenCheck(account: PhotoappAccount): { subcode: number; message: string } | undefined {
  if (account.token_status === 'revoked') return { subcode: TOKEN_SUBCODE.revoked, message: 'The user has not authorized application' };
  if (account.token_status === 'invalid') return { subcode: TOKEN_SUBCODE.invalid, message: 'Invalid OAuth access token' };
  if (account.token_status === 'expired' || (account.expires_at !== null && account.expires_at <= unix())) {
    return { subcode: TOKEN_SUBCODE.expired, message: 'Error validating access token: Session has expired' };
  }
  return undefined;
}

export const photoappModule: LocalRouteModule = ({ graph, local }, { state }) => {
  graph.get('/:accountId', (ctx, next) => {
    const account = state.photoappAccounts.get(ctx.params.accountId!);
    if (!account) return next();
    const refused = tokenCheck(account);
    ctx.body = {
      id: account.id,
      token_info: {
        is_valid: !refused,
        expires_at: account.expires_at ?? 0,
        ...(refused ? { error: { code: GRAPH_CODE.oauth, subcode: refused.subcode, message: refused.message } } : {}),
      },
    };
  });

  local.post('/photoapp_accounts', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const input = accountInput.safeParse(body);
    if (!input.success) return graphError(ctx, 400, GRAPH_CODE.invalidParameter, input.error.message);
    const account: PhotoappAccount = {
      id: input.data.id ?? newNumericId(),
      access_token: `IGAA${crypto.randomBytes(16).toString('hex')}`,
      token_status: input.data.token_status === 'expiring' ? 'ok' : (input.data.token_status ?? 'ok'),
      expires_at: input.data.expires_at === undefined ? unix() + 60 * 86_400 : input.data.expires_at,
    };
    state.photoappAccounts.set(account.id, account);
    ctx.status = 201;
    ctx.body = account;
  });

  local.post('/photoapp_accounts/:id/token_status', async (ctx) => {
    const body = await jsonBody(ctx);
    if (!body) return;
    const account = state.photoappAccounts.get(ctx.params.id!);
    const input = accountInput.safeParse(body);
    if (!account || !input.success) return graphError(ctx, 400, GRAPH_CODE.invalidParameter, 'unknown account or bad body');
    // `expiring` is the platform's verdict on a valid token that ends soon: set it with expires_at.
    if (input.data.token_status) account.token_status = input.data.token_status === 'expiring' ? 'ok' : input.data.token_status;
    if (input.data.expires_at !== undefined) account.expires_at = input.data.expires_at;
    ctx.body = account;
  });
};
