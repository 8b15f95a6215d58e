/**
 * The per-key rate limit, one limit for every API process sharing a Postgres (DECISIONS: per key).
 *
 * Each process leases tokens from the key's shared bucket (src/db/rate-buckets.ts, one statement per
 * lease) and spends them in memory: a request costs a Map lookup while its process holds tokens.
 * Leases grow while a key has headroom and shrink to one token near its limit (src/core/rate-lease.ts);
 * tokens left unspent after LEASE_MS go back to the bucket, so an idle process starves nobody.
 * A key found empty is refused here until its next token is due, without asking again.
 *
 * Postgres unreachable: the limiter steps aside rather than answering for it. Each key falls back
 * to a bucket of its own in this process (the limit per process, as before the shared bucket)
 * while a background lease checks, at most once per second, whether Postgres is back. The request
 * goes on to its handler, which answers as it would have (a publish: 503 with Retry-After), with no
 * wait added by the limiter.
 */
import {
  applyGrant,
  expireLease,
  LEASE_MS,
  localRetryAfterSeconds,
  maxLease,
  newKeyLease,
  nextSize,
  spendLocal,
} from '../core/rate-lease.js';
import type { KeyLease } from '../core/rate-lease.js';
import { DomainError } from '../core/domain-error.js';
import { take, type Bucket } from '../core/token-bucket.js';
import { leaseRateTokens, returnRateTokens } from '../db/rate-buckets.js';
import { isDatabaseUnavailable, type Db } from '../db/pool.js';
import { logger } from '../runtime/logger.js';

export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  /** Synchronous while this process holds tokens for the key (or knows it is empty). */
  take(keyId: string): RateVerdict | Promise<RateVerdict>;
  /** Statements sent so far: leases and returns (the benchmark's cost per request). */
  readonly statements: number;
  /** Gives back what this process holds; it keeps working afterwards (it leases again). */
  close(): Promise<void>;
}

const ALLOWED: RateVerdict = { allowed: true };
/** How long a process uses its own buckets after finding Postgres unreachable, before it looks again. */
const FALLBACK_MS = 1_000;
const FOREIGN_KEY_VIOLATION = '23503';

interface KeyState {
  lease: KeyLease;
  /** The lease being asked for, shared by the requests that wait on it, and how many they are. */
  asking?: Promise<void>;
  waiting: number;
}

export function createRateLimiter(db: Db, opts: { capacity: number; refillPerSecond: number; now?: () => number }): RateLimiter {
  return new SharedRateLimiter(db, opts.capacity, opts.refillPerSecond, opts.now ?? Date.now);
}

class SharedRateLimiter implements RateLimiter {
  statements = 0;
  private readonly max: number;
  private readonly keys = new Map<string, KeyState>();
  /** Each key's bucket in this process, used only while Postgres is unreachable. */
  private readonly local = new Map<string, Bucket>();
  private fallbackUntil = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly capacity: number,
    private readonly perSecond: number,
    private readonly now: () => number,
  ) {
    this.max = maxLease(capacity);
  }

  take(keyId: string): RateVerdict | Promise<RateVerdict> {
    let state = this.keys.get(keyId);
    if (!state) {
      state = { lease: newKeyLease(), waiting: 0 };
      this.keys.set(keyId, state);
      this.sweeper ??= setInterval(() => void this.sweep(), LEASE_MS / 2).unref();
    }
    const t = this.now();
    if (this.fallbackUntil > t) {
      // Nobody waits on Postgres while it is away; one background lease looks whether it is back.
      if (!state.asking) this.ask(keyId, state).catch((err) => logger.warn({ err }, 'rate limit lease failed'));
      return this.fallback(keyId);
    }
    const verdict = spendLocal(state.lease, t);
    if (verdict === 'allow') return ALLOWED;
    if (verdict === 'refuse') return this.refuse(state.lease);
    return this.waitForLease(keyId, state);
  }

  async close(): Promise<void> {
    for (const state of this.keys.values()) state.lease.expiresAtMs = 0;
    await this.sweep();
  }

  private refuse(lease: KeyLease): RateVerdict {
    return { allowed: false, retryAfterSeconds: localRetryAfterSeconds(lease, this.now()) };
  }

  private fallback(keyId: string): RateVerdict {
    const r = take(this.local.get(keyId), this.now(), this.capacity, this.perSecond);
    this.local.set(keyId, r.bucket);
    return r.allowed ? ALLOWED : { allowed: false, retryAfterSeconds: r.retryAfterSeconds };
  }

  private async waitForLease(keyId: string, state: KeyState): Promise<RateVerdict> {
    for (;;) {
      state.waiting++;
      try {
        await this.ask(keyId, state);
      } finally {
        state.waiting--;
      }
      if (this.fallbackUntil > this.now()) return this.fallback(keyId);
      const verdict = spendLocal(state.lease, this.now());
      if (verdict === 'allow') return ALLOWED;
      if (verdict === 'refuse') return this.refuse(state.lease);
    }
  }

  /** One lease for the key at a time, shared by whoever waits on it. */
  private ask(keyId: string, state: KeyState): Promise<void> {
    state.asking ??= this.lease(keyId, state).finally(() => {
      state.asking = undefined;
    });
    return state.asking;
  }

  private async lease(keyId: string, state: KeyState): Promise<void> {
    const t = this.now();
    const unspent = expireLease(state.lease, t);
    if (unspent > 0) void this.giveBack(new Map([[keyId, unspent]]));
    const want = nextSize(state.lease, t, this.max, state.waiting);
    this.statements++;
    try {
      const { granted, level } = await leaseRateTokens(this.db, { keyId, want, capacity: this.capacity, perSecond: this.perSecond });
      applyGrant(state.lease, granted, level, this.now(), this.perSecond);
      this.fallbackUntil = 0;
    } catch (err) {
      // The key was deleted (with its Account) since it was looked up.
      if ((err as { code?: string }).code === FOREIGN_KEY_VIOLATION) throw new DomainError(401, 'unauthorized', 'invalid API key');
      if (!isDatabaseUnavailable(err)) throw err;
      if (this.fallbackUntil === 0)
        logger.warn({ err: { message: (err as Error).message } }, 'rate limit: Postgres unreachable, limiting per process');
      this.fallbackUntil = this.now() + FALLBACK_MS;
    }
  }

  private async giveBack(returns: Map<string, number>): Promise<void> {
    this.statements++;
    // Tokens that cannot go back are lost, which only makes the limit stricter for a moment.
    await returnRateTokens(this.db, this.capacity, returns).catch((err) =>
      logger.debug({ err }, 'rate limit: unspent tokens not returned'),
    );
  }

  /** Gives back expired leases' tokens in one statement and forgets keys nobody uses. */
  private async sweep(): Promise<void> {
    const t = this.now();
    const returns = new Map<string, number>();
    for (const [keyId, state] of this.keys) {
      if (state.asking) continue;
      const unspent = expireLease(state.lease, t);
      if (unspent > 0) returns.set(keyId, unspent);
      else if (state.lease.expiresAtMs + LEASE_MS < t && state.lease.emptyUntilMs < t) this.keys.delete(keyId);
    }
    if (this.fallbackUntil < t) this.local.clear();
    if (this.keys.size === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
    if (returns.size > 0) await this.giveBack(returns);
  }
}
