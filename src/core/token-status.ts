/**
 * A photoapp channel account's token status (SPEC 3.4, DECISIONS "Token status"), judged from
 * the provider's token read (debug-token-like `{ is_valid, expires_at, error }`).
 */
import { TOKEN_SUBCODE } from './graph-codes.js';

export const TOKEN_STATUSES = ['ok', 'expiring', 'expired', 'invalid', 'revoked', 'unknown'] as const;
export type TokenStatus = (typeof TOKEN_STATUSES)[number];

/** `expiring`: a valid token that ends within this many days (automatic renewal still tries). */
export const EXPIRING_WITHIN_DAYS = 7;

export interface TokenInfo {
  is_valid?: boolean;
  /** Unix seconds; 0 or absent for a token that does not expire. */
  expires_at?: number;
  error?: { code?: number; subcode?: number };
}

export function judgeToken(info: TokenInfo, now: Date): { status: TokenStatus; expiresAt: Date | null } {
  const expiresAt = info.expires_at ? new Date(info.expires_at * 1000) : null;
  if (info.is_valid === true) {
    if (expiresAt && expiresAt.getTime() <= now.getTime()) return { status: 'expired', expiresAt };
    const soon = expiresAt !== null && expiresAt.getTime() - now.getTime() <= EXPIRING_WITHIN_DAYS * 86_400_000;
    return { status: soon ? 'expiring' : 'ok', expiresAt };
  }
  if (info.is_valid !== false) return { status: 'unknown', expiresAt };
  return { status: tokenStatusOfSubcode(info.error?.subcode), expiresAt };
}

/** The status a Graph 190 refusal's subcode means. */
export function tokenStatusOfSubcode(subcode: number | undefined): TokenStatus {
  if (subcode === TOKEN_SUBCODE.expired) return 'expired';
  if (subcode === TOKEN_SUBCODE.revoked || subcode === TOKEN_SUBCODE.invalidated) return 'revoked';
  return 'invalid';
}

/** While expired, invalid or revoked, sends fail until the account is reconnected. */
export function blocksSending(status: TokenStatus | null | undefined): boolean {
  return status === 'expired' || status === 'invalid' || status === 'revoked';
}

/**
 * Maintenance renews a usable token once it ends within this many days: before it reads
 * `expiring`, and again at every run while it does (a renewal that keeps failing).
 */
export const RENEW_WITHIN_DAYS = 14;
/** Maintenance re-reads a token's status from the provider when its last read is older than this. */
export const RECHECK_AFTER_MS = 6 * 3_600_000;

/** Which tokens a maintenance run at `now` looks at: those ending before `renewBefore`, those last read before `checkedBefore`. */
export function maintenanceWindow(now: Date): { renewBefore: Date; checkedBefore: Date } {
  return {
    renewBefore: new Date(now.getTime() + RENEW_WITHIN_DAYS * 86_400_000),
    checkedBefore: new Date(now.getTime() - RECHECK_AFTER_MS),
  };
}

/** Whether a token ending at `expiresAt` is one to renew now (a usable one only: the others wait for a reconnect). */
export function dueForRenewal(status: TokenStatus | null, expiresAt: Date | null, now: Date): boolean {
  if (blocksSending(status) || expiresAt === null) return false;
  return expiresAt.getTime() < maintenanceWindow(now).renewBefore.getTime();
}

/**
 * The stored status as it stands at `now`: a token read `ok` or `expiring` whose date has come
 * since is `expiring` or `expired` already, without waiting for the next read.
 */
export function tokenStatusAt(stored: TokenStatus, expiresAt: Date | null, now: Date): TokenStatus {
  if (stored !== 'ok' && stored !== 'expiring') return stored;
  return judgeToken({ is_valid: true, expires_at: expiresAt ? expiresAt.getTime() / 1000 : 0 }, now).status;
}
