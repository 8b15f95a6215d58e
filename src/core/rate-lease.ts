/**
 * The per-key rate limit shared by every API process: one token bucket per key in Postgres, from
 * which a process leases a few tokens at a time and spends them in memory, so a request costs no
 * round trip while its process holds tokens. Pure: the clock is passed in.
 *
 * Why the total never exceeds `capacity + perSecond × elapsed`: a token is spent only after a
 * lease took it from the shared bucket, the bucket's level never goes below zero (`grantOf` takes
 * at most the whole tokens it holds), and a token given back was never spent. src/db/rate-buckets.ts
 * runs `bucketLevel` and `grantOf` in SQL, in the statement that leases.
 */

/** How long leased tokens may be spent; what is left then goes back to the bucket for the others. */
export const LEASE_MS = 1_000;
/** The largest lease whatever the limit: at this size a busy key costs one statement per thousand requests. */
export const MAX_LEASE = 1_000;

/** The bucket's level `elapsedMs` after it held `tokens`: refilled, never above `capacity`. */
export function bucketLevel(tokens: number, elapsedMs: number, capacity: number, perSecond: number): number {
  return Math.min(capacity, tokens + (Math.max(0, elapsedMs) / 1000) * perSecond);
}

/**
 * Tokens a lease asking for `want` takes from a bucket at `level`: at most half of what is there
 * (one token when 1 ≤ level < 2), so near the limit leases shrink to single tokens and no process
 * holds what the others need; none when not one whole token is there.
 */
export function grantOf(level: number, want: number): number {
  return Math.max(0, Math.min(want, Math.floor(Math.max(Math.min(level, 1), level / 2))));
}

/** The largest lease for a limit: an eighth of the burst, so tokens held in processes stay small beside it. */
export function maxLease(capacity: number): number {
  return Math.max(1, Math.min(MAX_LEASE, Math.floor(capacity / 8)));
}

/** Seconds until a bucket at `level` holds one whole token (at least 1): the Retry-After of a 429. */
export function retryAfterSeconds(level: number, perSecond: number): number {
  const wait = perSecond > 0 ? Math.ceil((1 - level) / perSecond) : 60;
  return Math.max(1, wait);
}

/** What one process holds of one key's bucket. Mutated in place: it is touched on every request. */
export interface KeyLease {
  /** Whole tokens left to spend, until `expiresAtMs`. */
  tokens: number;
  grantedAtMs: number;
  expiresAtMs: number;
  /** What the next lease asks for; adapts to how fast this process spends (`nextSize`). */
  size: number;
  /** The bucket had no whole token: refuse here until then, without asking again. */
  emptyUntilMs: number;
}

export function newKeyLease(): KeyLease {
  return { tokens: 0, grantedAtMs: 0, expiresAtMs: 0, size: 1, emptyUntilMs: 0 };
}

export type LocalVerdict = 'allow' | 'refuse' | 'ask';

/** One request: spend a held token, refuse while the bucket is known empty, or ask for a lease. */
export function spendLocal(lease: KeyLease, nowMs: number): LocalVerdict {
  if (lease.tokens >= 1 && nowMs < lease.expiresAtMs) {
    lease.tokens -= 1;
    return 'allow';
  }
  if (nowMs < lease.emptyUntilMs) return 'refuse';
  return 'ask';
}

/** Retry-After of a request refused by `spendLocal`. */
export function localRetryAfterSeconds(lease: KeyLease, nowMs: number): number {
  return Math.max(1, Math.ceil((lease.emptyUntilMs - nowMs) / 1000));
}

/**
 * Takes back the tokens of a lease that expired unspent (to be given back to the bucket) and
 * halves the next lease: this process asked for more than it used.
 */
export function expireLease(lease: KeyLease, nowMs: number): number {
  if (nowMs < lease.expiresAtMs || lease.tokens < 1) return 0;
  const unspent = lease.tokens;
  lease.tokens = 0;
  lease.size = Math.max(1, Math.ceil(lease.size / 2));
  return unspent;
}

/**
 * The size of the lease to ask for now (the held one is spent): double when it was used up within
 * half its life, so a busy key soon needs one statement per many requests; at least one token per
 * request waiting on this lease; never above `max`.
 */
export function nextSize(lease: KeyLease, nowMs: number, max: number, waiting: number): number {
  if (lease.grantedAtMs > 0 && nowMs - lease.grantedAtMs < LEASE_MS / 2) lease.size = Math.min(max, lease.size * 2);
  lease.size = Math.min(lease.size, max);
  return Math.min(max, Math.max(lease.size, waiting));
}

/** Records a lease's answer: `granted` tokens to spend, or, when none, how long the bucket stays empty. */
export function applyGrant(lease: KeyLease, granted: number, level: number, nowMs: number, perSecond: number): void {
  lease.tokens += granted;
  // A refusal is no lease: it must not count as one used up fast (`nextSize`).
  lease.grantedAtMs = granted > 0 ? nowMs : 0;
  lease.expiresAtMs = nowMs + LEASE_MS;
  lease.emptyUntilMs = granted > 0 ? 0 : nowMs + emptyForMs(level, perSecond);
}

/**
 * A key at its limit is asked for by every process each time a token is due: waiting at least
 * EMPTY_MIN_MS bounds that to a few statements per second per process, and the tokens refilled
 * meanwhile stay in the bucket for whoever asks next. The Retry-After is unchanged (it is at least 1 s).
 */
export const EMPTY_MIN_MS = 250;

function emptyForMs(level: number, perSecond: number): number {
  return perSecond > 0 ? Math.max(EMPTY_MIN_MS, ((1 - level) / perSecond) * 1000) : 60_000;
}
