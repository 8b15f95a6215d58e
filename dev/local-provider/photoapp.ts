/**
 * Photoapp accounts and their own tokens. Every Graph call about a photoapp account must carry
 * that account's current token: the app's token, another account's, a replaced one or an
 * unknown one is refused as the provider refuses it (code 190), and so is the account's own
 * token once expired, invalidated or revoked. The login and renewal are in photoapp-login.ts.
 *
 * Graph: `GET /{account_id}?fields=token_info` answers the account's token like the provider's
 * debug-token read (`{ is_valid, expires_at, error }`).
 * Control: `POST /_local/photoapp_accounts` creates one (answered with its token);
 * `POST /_local/photoapp_accounts/{id}/token_status` sets its token status (`ok`, `expired`,
 * `invalid`, `revoked`) and expiry.
 */
import crypto from 'node:crypto';
import { z } from 'zod';
import { GRAPH_CODE, TOKEN_SUBCODE } from '../../src/core/graph-codes.js';
import { bearerOf, graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { newNumericId, type PhotoappAccount } from './state.js';

const tokenStatus = z.enum(['ok', 'expiring', 'expired', 'invalid', 'revoked']);
const accountInput = z.object({
  id: z.string().optional(),
  username: z.string().optional(),
  token_status: tokenStatus.optional(),
  /** Unix seconds; null for a token that does not expire. */
  expires_at: z.number().int().nullable().optional(),
});
export const unix = () => Math.floor(Date.now() / 1000);
/** A long-lived token's life, as the provider gives it. */
export const LONG_LIVED_TOKEN_S = 60 * 86_400;

export const newToken = () => `IGAA${crypto.randomBytes(16).toString('hex')}`;

/** Why `bearer` cannot be used for the account now (Graph code 190 with this subcode), or undefined. */
export function tokenCheck(account: PhotoappAccount, bearer: string | undefined): { subcode: number; message: string } | undefined {
  if (bearer !== account.access_token) return { subcode: TOKEN_SUBCODE.invalid, message: 'Invalid OAuth access token' };
  if (account.token_status === 'revoked') return { subcode: TOKEN_SUBCODE.revoked, message: 'The user has not authorized application' };
  if (account.token_status === 'invalid') return { subcode: TOKEN_SUBCODE.invalid, message: 'Invalid OAuth access token' };
  if (account.token_status === 'expired' || (account.expires_at !== null && account.expires_at <= unix())) {
    return { subcode: TOKEN_SUBCODE.expired, message: 'Error validating access token: Session has expired' };
  }
  return undefined;
}

export const photoappModule: LocalRouteModule = ({ graph, local }, { state }) => {
  graph.get('/:accountId', (koa, next) => {
    const account = state.photoappAccounts.get(koa.params.accountId!);
    if (!account) return next();
    // Another token than the account's own is refused outright; its own is judged in the answer.
    if (bearerOf(koa) !== account.access_token)
      return graphError(koa, 400, GRAPH_CODE.oauth, 'Invalid OAuth access token', TOKEN_SUBCODE.invalid);
    const refused = tokenCheck(account, account.access_token);
    koa.body = {
      id: account.id,
      token_info: {
        is_valid: !refused,
        expires_at: account.expires_at ?? 0,
        ...(refused ? { error: { code: GRAPH_CODE.oauth, subcode: refused.subcode, message: refused.message } } : {}),
      },
    };
  });

  local.post('/photoapp_accounts', async (koa) => {
    const body = await jsonBody(koa);
    if (!body) return;
    const input = accountInput.safeParse(body);
    if (!input.success) return graphError(koa, 400, GRAPH_CODE.invalidParameter, input.error.message);
    const id = input.data.id ?? newNumericId();
    const account: PhotoappAccount = {
      id,
      username: input.data.username ?? `shop_${id.slice(-6)}`,
      access_token: newToken(),
      token_status: input.data.token_status === 'expiring' ? 'ok' : (input.data.token_status ?? 'ok'),
      expires_at: input.data.expires_at === undefined ? unix() + LONG_LIVED_TOKEN_S : input.data.expires_at,
    };
    state.photoappAccounts.set(account.id, account);
    koa.status = 201;
    koa.body = account;
  });

  local.post('/photoapp_accounts/:id/token_status', async (koa) => {
    const body = await jsonBody(koa);
    if (!body) return;
    const account = state.photoappAccounts.get(koa.params.id!);
    const input = accountInput.safeParse(body);
    if (!account || !input.success) return graphError(koa, 400, GRAPH_CODE.invalidParameter, 'unknown account or bad body');
    // `expiring` is the platform's verdict on a valid token that ends soon: set it with expires_at.
    if (input.data.token_status) account.token_status = input.data.token_status === 'expiring' ? 'ok' : input.data.token_status;
    if (input.data.expires_at !== undefined) account.expires_at = input.data.expires_at;
    koa.body = account;
  });
};
