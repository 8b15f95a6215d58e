/**
 * The token status of a photoapp channel account (SPEC 3.4), read from the provider with the
 * account's own token and stored on the channel account. Re-checked before every photoapp send
 * and by maintenance (token-maintenance.ts); a read the provider could not answer keeps what was
 * stored (the send itself will tell).
 */
import { GRAPH_CODE } from '../../core/graph-codes.js';
import { judgeToken, tokenStatusOfSubcode, type TokenInfo, type TokenStatus } from '../../core/token-status.js';
import { getPhotoappToken, recordTokenVerdict } from '../../db/photoapp-tokens.js';
import { recordTokenStatus } from '../../db/channel-accounts.js';
import type { Queryable } from '../../db/pool.js';
import type { SecretBox } from '../../security/secret-box.js';
import { ProviderError, type ProviderHttp } from '../provider-http.js';
import { logger } from '../../runtime/logger.js';

export interface TokenCheckDeps {
  db: Queryable;
  providerApi: ProviderHttp;
  secretBox: Pick<SecretBox, 'open'>;
  now?: () => Date;
}

export interface AccountToken {
  /** As stored: a verdict is recorded only while it is still the account's token. */
  sealed: Buffer;
  plain: string;
}

/**
 * The account's own token, or undefined when it has none: it was never connected through a
 * setup link, so it cannot be used until it is, and its status says so (`invalid`).
 */
export async function accountToken(deps: Omit<TokenCheckDeps, 'providerApi'>, channelAccountId: string): Promise<AccountToken | undefined> {
  const sealed = await getPhotoappToken(deps.db, channelAccountId);
  if (!sealed) {
    await recordTokenStatus(deps.db, channelAccountId, 'invalid', null);
    return undefined;
  }
  return { sealed, plain: deps.secretBox.open(sealed) };
}

/** The status a refusal of the provider means for the token it was given, when it is a token refusal (code 190). */
export function statusOfRefusal(err: ProviderError): TokenStatus | undefined {
  return err.providerCode === GRAPH_CODE.oauth ? tokenStatusOfSubcode(err.providerSubcode) : undefined;
}

/** Reads the token from the provider and stores the verdict; undefined when the provider could not say. */
export async function refreshTokenStatus(
  deps: TokenCheckDeps,
  ca: { id: string; provider_account_id: string | null; token_expires_at: Date | null },
  token: AccountToken,
): Promise<{ status: TokenStatus; expiresAt: Date | null } | undefined> {
  if (!ca.provider_account_id) return undefined;
  let info: TokenInfo | undefined;
  try {
    const answer = await deps.providerApi.get<{ token_info?: TokenInfo }>(
      `/${encodeURIComponent(ca.provider_account_id)}`,
      { fields: 'token_info' },
      token.plain,
    );
    info = answer.token_info;
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    // The provider refuses a read with a token it no longer takes: that is the token's verdict.
    const refused = statusOfRefusal(err);
    if (refused) {
      const verdict = { status: refused, expiresAt: ca.token_expires_at };
      await recordTokenVerdict(deps.db, ca.id, token.sealed, verdict);
      return verdict;
    }
    logger.warn({ channelAccountId: ca.id, status: err.status, err: err.message }, 'token status read failed');
    return undefined;
  }
  const verdict = judgeToken(info ?? {}, deps.now?.() ?? new Date());
  await recordTokenVerdict(deps.db, ca.id, token.sealed, verdict);
  return verdict;
}
