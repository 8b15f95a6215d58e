/**
 * The photoapp token job of the maintenance run (SPEC 3.4: `expiring` means automatic renewal
 * still tries). Each usable token ending within RENEW_WITHIN_DAYS is renewed with the provider
 * (`GET /refresh_access_token`, carrying that token) and the new one stored sealed; every token
 * whose status was last read more than RECHECK_AFTER_MS ago is read again, so reads of the
 * channel accounts stay current without a send. A failure of one account never stops the others.
 */
import type { TokenMaintenanceReport } from '../../core/maintenance.js';
import { TOKENS_PER_RUN } from '../../core/maintenance.js';
import { blocksSending, dueForRenewal, maintenanceWindow, type TokenStatus } from '../../core/token-status.js';
import { photoappTokensToMaintain, recordTokenVerdict, storeRenewedToken, type TokenToMaintain } from '../../db/photoapp-tokens.js';
import type { Db } from '../../db/pool.js';
import { logger } from '../../runtime/logger.js';
import type { SecretBox } from '../../security/secret-box.js';
import { grantVerdict, tokenGrant } from '../photoapp-login.js';
import { ProviderError, type ProviderHttp } from '../provider-http.js';
import { refreshTokenStatus, statusOfRefusal, type AccountToken } from './token-status.js';

export interface TokenMaintenanceDeps {
  db: Db;
  /** Unset: this deployment has no provider, and the job does nothing. */
  providerApi?: ProviderHttp;
  secretBox: SecretBox;
  now?: () => Date;
  /** Only this Account's tokens (tests and tools sharing a database); every Account's when unset. */
  accountId?: string;
  /** Called after each account (the activity heartbeats). */
  progress?: () => void;
}

type Outcome = 'renewed' | 'checked' | 'failed';

/** Renews one token; on a refusal, the token's verdict is recorded; undefined when the provider could not answer. */
async function renew(deps: TokenMaintenanceDeps & { providerApi: ProviderHttp }, row: TokenToMaintain, token: AccountToken, now: Date) {
  let raw: unknown;
  try {
    raw = await deps.providerApi.get('/refresh_access_token', { grant_type: 'ig_refresh_token' }, token.plain);
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    const refused = statusOfRefusal(err);
    if (refused) await recordTokenVerdict(deps.db, row.id, token.sealed, { status: refused, expiresAt: row.token_expires_at });
    logger.warn({ channelAccountId: row.id, status: err.status, err: err.message }, 'photoapp token renewal failed');
    return refused ? { status: refused, renewed: false } : undefined;
  }
  const grant = tokenGrant.safeParse(raw);
  if (!grant.success) {
    logger.warn({ channelAccountId: row.id }, 'photoapp token renewal answered an unexpected shape');
    return undefined;
  }
  const verdict = grantVerdict(grant.data, now);
  // A reconnect that stored another token meanwhile keeps it: this renewal is dropped.
  await storeRenewedToken(deps.db, row.id, token.sealed, deps.secretBox.seal(grant.data.access_token), verdict);
  return { status: verdict.status, renewed: true };
}

/**
 * A token due for renewal is renewed; any other is read, and renewed at once when the read
 * shows it due (a token never read before).
 */
async function maintainOne(
  deps: TokenMaintenanceDeps & { providerApi: ProviderHttp },
  row: TokenToMaintain,
  now: Date,
): Promise<{ outcome: Outcome; status?: TokenStatus }> {
  const token: AccountToken = { sealed: row.token_ciphertext, plain: deps.secretBox.open(row.token_ciphertext) };
  let read = false;
  if (!dueForRenewal(row.token_status, row.token_expires_at, now)) {
    const verdict = await refreshTokenStatus(deps, row, token);
    if (!verdict) return { outcome: 'failed' };
    if (!dueForRenewal(verdict.status, verdict.expiresAt, now)) return { outcome: 'checked', status: verdict.status };
    read = true;
  }
  const renewal = await renew(deps, row, token, now);
  if (renewal) return { outcome: renewal.renewed ? 'renewed' : 'checked', status: renewal.status };
  // The provider could not answer the renewal: the status is read all the same, so reads say `expiring` in time.
  const verdict = read ? undefined : await refreshTokenStatus(deps, row, token);
  return { outcome: 'failed', status: verdict?.status };
}

export async function maintainPhotoappTokens(deps: TokenMaintenanceDeps): Promise<TokenMaintenanceReport> {
  const report: TokenMaintenanceReport = {
    renewed: 0,
    checked: 0,
    failed: 0,
    needReconnect: 0,
    providerConfigured: Boolean(deps.providerApi),
  };
  const { providerApi } = deps;
  if (!providerApi) return report;
  const now = deps.now?.() ?? new Date();
  const rows = await photoappTokensToMaintain(deps.db, { ...maintenanceWindow(now), limit: TOKENS_PER_RUN, accountId: deps.accountId });
  for (const row of rows) {
    let status: TokenStatus | undefined;
    try {
      const done = await maintainOne({ ...deps, providerApi }, row, now);
      report[done.outcome]++;
      status = done.status;
    } catch (err) {
      report.failed++;
      logger.error({ channelAccountId: row.id, err: (err as Error).message }, 'photoapp token maintenance failed');
    }
    if (blocksSending(status)) report.needReconnect++;
    deps.progress?.();
  }
  return report;
}
