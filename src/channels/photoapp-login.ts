/**
 * The end of the provider's login for a photoapp account (SPEC 3.4): the Customer's browser
 * authorized the app on the provider and hands the platform a code through a photoapp setup
 * link's page. The platform exchanges the code for the account's own long-lived token (Graph
 * `GET /photoapp/oauth/access_token`), asks the provider whose token it is (`GET /me`, with that
 * token), and connects the account to the link's Customer and environment with the token sealed
 * at rest. Authorizing an account this Account already has reconnects it: its token is replaced,
 * so an expired, invalid or revoked one can send again. The token is never part of an answer.
 */
import { z } from 'zod';
import { DomainError } from '../core/domain-error.js';
import { judgeToken, type TokenStatus } from '../core/token-status.js';
import { markSetupLinkCompleted, type SetupLinkRow } from '../db/setup-links.js';
import { connectPhotoappAccount } from '../db/photoapp-tokens.js';
import type { Db } from '../db/pool.js';
import type { SecretBox } from '../security/secret-box.js';
import { asProviderFailure } from './provider-errors.js';
import { ProviderError, type ProviderHttp } from './provider-http.js';

export interface PhotoappLoginDeps {
  db: Db;
  provider: ProviderHttp;
  secretBox: Pick<SecretBox, 'seal'>;
  /** Sent as client_secret of the code exchange, as the provider's OAuth asks. */
  appSecret?: string;
}

export interface PhotoappLoginResult {
  setup_link_id: string;
  channel: 'photoapp';
  channel_account_id: string;
  provider_account_id: string;
  username: string | null;
  /** True when the account was already connected: its token was replaced. */
  reconnected: boolean;
}

/** The provider's answer to a code exchange and to a renewal: a token and its life in seconds. */
export const tokenGrant = z.looseObject({ access_token: z.string().min(1), expires_in: z.number().int().positive().optional() });
const whoAnswer = z.looseObject({
  id: z.union([z.string().min(1), z.number()]).transform(String),
  username: z.string().optional(),
});

function shape<T extends z.ZodType>(schema: T, raw: unknown, doing: string): z.infer<T> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new DomainError(502, 'provider_error', `${doing}: the provider answered an unexpected shape`);
  return parsed.data;
}

/** A granted token's verdict: valid, ending `expires_in` seconds after `now` (never when the provider names no life). */
export function grantVerdict(grant: z.infer<typeof tokenGrant>, now: Date): { status: TokenStatus; expiresAt: Date | null } {
  const expiresAt = grant.expires_in ? new Date(now.getTime() + grant.expires_in * 1000) : null;
  return judgeToken({ is_valid: true, expires_at: expiresAt ? expiresAt.getTime() / 1000 : 0 }, now);
}

async function exchangeCode(deps: PhotoappLoginDeps, code: string): Promise<z.infer<typeof tokenGrant>> {
  let raw: unknown;
  try {
    raw = await deps.provider.get('/photoapp/oauth/access_token', {
      code,
      ...(deps.appSecret ? { client_secret: deps.appSecret } : {}),
    });
  } catch (err) {
    if (err instanceof ProviderError && err.status >= 400 && err.status < 500) {
      throw new DomainError(422, 'invalid_signup_code', `the provider refused the login code: ${err.message}`);
    }
    asProviderFailure(err, 'exchanging the login code');
  }
  return shape(tokenGrant, raw, 'exchanging the login code');
}

export async function completePhotoappLogin(
  deps: PhotoappLoginDeps,
  link: SetupLinkRow,
  code: string,
  now: Date,
): Promise<PhotoappLoginResult> {
  const grant = await exchangeCode(deps, code);
  let raw: unknown;
  try {
    raw = await deps.provider.get('/me', { fields: 'user_id,username' }, grant.access_token);
  } catch (err) {
    asProviderFailure(err, 'reading which account the login authorized');
  }
  const who = shape(whoAnswer, raw, 'reading which account the login authorized');
  const connected = await connectPhotoappAccount(deps.db, {
    accountId: link.account_id,
    customerId: link.customer_id,
    environment: link.environment,
    providerAccountId: who.id,
    display: who.username ? `@${who.username}` : who.id,
    ciphertext: deps.secretBox.seal(grant.access_token),
    verdict: grantVerdict(grant, now),
  });
  if (!connected) {
    throw new DomainError(409, 'channel_account_in_use', 'this photoapp account is connected to another Account or environment');
  }
  await markSetupLinkCompleted(deps.db, link.id, now);
  return {
    setup_link_id: link.id,
    channel: 'photoapp',
    channel_account_id: connected.account.id,
    provider_account_id: who.id,
    username: who.username ?? null,
    reconnected: connected.reconnected,
  };
}
