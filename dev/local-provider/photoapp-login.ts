/**
 * The provider's login for photoapp accounts, and the renewal of their tokens.
 *
 * Graph:
 * - `GET /photoapp/oauth/access_token?code=...`: the login's code exchanged (once) for the
 *   account's long-lived token `{ access_token, token_type, expires_in }` (60 days).
 * - `GET /me?fields=user_id,username`: whose token this is (the account's own token only).
 * - `GET /refresh_access_token?grant_type=ig_refresh_token`: a valid token renewed as the
 *   provider renews a long-lived one: a new token, same answer; the old one stops working.
 *
 * Control: `POST /_local/photoapp/signup/complete { setup_url | (token, platform_url),
 * account?: { id?, username? } }` plays the Customer's browser through the login: creates the
 * account (or takes the existing one: a reconnection), issues a code, and POSTs `{ code }` to
 * the platform's `{setup_url}/complete`. Answers the code, the account and the platform's answer.
 */
import crypto from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import { GRAPH_CODE, TOKEN_SUBCODE } from '../../src/core/graph-codes.js';
import { bearerOf, graphError, jsonBody, type LocalRouteModule } from './graph.js';
import { LONG_LIVED_TOKEN_S, newToken, tokenCheck, unix } from './photoapp.js';
import { newNumericId, type LocalProviderState, type PhotoappAccount } from './state.js';

const signupInput = z.object({
  setup_url: z.string().url().optional(),
  token: z.string().optional(),
  platform_url: z.string().url().optional(),
  account: z.object({ id: z.string().optional(), username: z.string().optional() }).optional(),
});

/** The account whose current token the call carries, or the provider's refusal (answered). */
function accountOfToken(state: LocalProviderState, koa: Context): PhotoappAccount | undefined {
  const bearer = bearerOf(koa);
  const account = [...state.photoappAccounts.values()].find((a) => a.access_token === bearer);
  const refused = account ? tokenCheck(account, bearer) : { subcode: TOKEN_SUBCODE.invalid, message: 'Invalid OAuth access token' };
  if (refused) return void graphError(koa, 400, GRAPH_CODE.oauth, refused.message, refused.subcode);
  return account;
}

/** A fresh long-lived token for the account: the old one stops working. */
function issueToken(account: PhotoappAccount): { access_token: string; token_type: string; expires_in: number } {
  account.access_token = newToken();
  account.token_status = 'ok';
  account.expires_at = unix() + LONG_LIVED_TOKEN_S;
  return { access_token: account.access_token, token_type: 'bearer', expires_in: LONG_LIVED_TOKEN_S };
}

/** Login codes → the account they authorize, per local provider; a code is exchanged once. */
const codesOf = new WeakMap<LocalProviderState, Map<string, string>>();
function codes(state: LocalProviderState): Map<string, string> {
  let c = codesOf.get(state);
  if (!c) codesOf.set(state, (c = new Map()));
  return c;
}

/** The account the login authorizes: the existing one (a reconnection) or a new one. */
function authorizingAccount(state: LocalProviderState, input: z.infer<typeof signupInput>['account']): PhotoappAccount {
  const id = input?.id ?? newNumericId();
  const account = state.photoappAccounts.get(id) ?? {
    id,
    username: `shop_${id.slice(-6)}`,
    access_token: newToken(),
    token_status: 'ok',
    expires_at: unix() + LONG_LIVED_TOKEN_S,
  };
  if (input?.username) account.username = input.username;
  state.photoappAccounts.set(id, account);
  return account;
}

export const photoappLoginModule: LocalRouteModule = ({ graph, local }, { state }) => {
  graph.get('/me', (koa) => {
    const account = accountOfToken(state, koa);
    if (account) koa.body = { id: account.id, user_id: account.id, username: account.username };
  });

  graph.get('/refresh_access_token', (koa) => {
    if (koa.query.grant_type !== 'ig_refresh_token') {
      return graphError(koa, 400, GRAPH_CODE.invalidParameter, 'grant_type must be ig_refresh_token');
    }
    const account = accountOfToken(state, koa);
    if (account) koa.body = issueToken(account);
  });

  graph.get('/photoapp/oauth/access_token', (koa) => {
    const code = typeof koa.query.code === 'string' ? koa.query.code : '';
    const account = state.photoappAccounts.get(codes(state).get(code) ?? '');
    if (!account) return graphError(koa, 400, GRAPH_CODE.invalidParameter, 'This authorization code has been used or is invalid', 36009);
    codes(state).delete(code);
    koa.body = issueToken(account);
  });

  local.post('/photoapp/signup/complete', async (koa) => {
    const body = await jsonBody(koa);
    if (!body) return;
    const input = signupInput.safeParse(body);
    if (!input.success) return graphError(koa, 400, GRAPH_CODE.invalidParameter, input.error.message);
    const { setup_url, token, platform_url } = input.data;
    const target = setup_url ?? (token && platform_url ? `${platform_url.replace(/\/+$/, '')}/setup/${token}` : undefined);
    if (!target) return graphError(koa, 400, GRAPH_CODE.invalidParameter, 'give setup_url, or token with platform_url');
    const account = authorizingAccount(state, input.data.account);
    const code = `igcode_${crypto.randomBytes(16).toString('hex')}`;
    codes(state).set(code, account.id);
    const res = await fetch(`${target}/complete`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code }),
    });
    const text = await res.text();
    let answer: unknown = text;
    try {
      answer = JSON.parse(text);
    } catch {
      // kept as text
    }
    koa.body = { code, account: { id: account.id, username: account.username }, platform: { status: res.status, body: answer } };
  });
};
