/**
 * The token status of a photoapp channel account (SPEC 3.4), read from the provider and stored
 * on the channel account. Re-checked before every photoapp send; a read that fails keeps what
 * was stored (the send itself will tell).
 */
import { judgeToken, type TokenInfo, type TokenStatus } from '../../core/token-status.js';
import { recordTokenStatus } from '../../db/channel-accounts.js';
import type { Queryable } from '../../db/pool.js';
import { ProviderError, type ProviderHttp } from '../provider-http.js';
import { logger } from '../../runtime/logger.js';

export interface TokenCheckDeps {
  db: Queryable;
  providerApi: ProviderHttp;
  now?: () => Date;
}

/** Reads the token of the account from the provider and stores the verdict; undefined when the provider could not say. */
export async function refreshTokenStatus(
  deps: TokenCheckDeps,
  ca: { id: string; provider_account_id: string | null },
): Promise<{ status: TokenStatus; expiresAt: Date | null } | undefined> {
  if (!ca.provider_account_id) return undefined;
  let info: TokenInfo | undefined;
  try {
    const answer = await deps.providerApi.get<{ token_info?: TokenInfo }>(`/${encodeURIComponent(ca.provider_account_id)}`, {
      fields: 'token_info',
    });
    info = answer.token_info;
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    logger.warn({ channelAccountId: ca.id, status: err.status, err: err.message }, 'token status read failed');
    return undefined;
  }
  const verdict = judgeToken(info ?? {}, deps.now?.() ?? new Date());
  await recordTokenStatus(deps.db, ca.id, verdict.status, verdict.expiresAt);
  return verdict;
}
