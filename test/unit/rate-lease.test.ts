import { describe, expect, it } from 'vitest';
import {
  applyGrant,
  bucketLevel,
  EMPTY_MIN_MS,
  expireLease,
  grantOf,
  LEASE_MS,
  localRetryAfterSeconds,
  MAX_LEASE,
  maxLease,
  newKeyLease,
  nextSize,
  retryAfterSeconds,
  spendLocal,
  type KeyLease,
} from '../../src/core/rate-lease.js';
import { take } from '../../src/core/token-bucket.js';

describe('the shared bucket', () => {
  it('refills at the rate up to capacity, never back in time', () => {
    expect(bucketLevel(0, 500, 100, 20)).toBe(10);
    expect(bucketLevel(95, 10_000, 100, 20)).toBe(100);
    expect(bucketLevel(3, -2_000, 100, 20)).toBe(3);
  });

  it('grants at most half of what is there, one token between 1 and 2, none below 1', () => {
    expect(grantOf(100, 12)).toBe(12);
    expect(grantOf(10, 12)).toBe(5);
    expect(grantOf(3.9, 12)).toBe(1);
    expect(grantOf(1.5, 12)).toBe(1);
    expect(grantOf(1, 12)).toBe(1);
    expect(grantOf(0.99, 12)).toBe(0);
    expect(grantOf(0, 12)).toBe(0);
    // Never more than the whole tokens held: the level cannot go below zero.
    for (let level = 0; level < 50; level += 0.25) expect(grantOf(level, 1_000)).toBeLessThanOrEqual(Math.floor(level));
  });

  it('leases are a small part of the burst, capped for huge limits', () => {
    expect(maxLease(100)).toBe(12);
    expect(maxLease(2)).toBe(1);
    expect(maxLease(1e9)).toBe(MAX_LEASE);
  });

  it('Retry-After is what the in-process bucket answered', () => {
    // The same bucket state through both: the 429 a client sees does not change.
    for (const [tokens, perSecond] of [
      [0.2, 0.5],
      [0, 20],
      [0.99, 1],
      [0, 0],
    ] as const) {
      const old = take({ tokens, updatedMs: 0 }, 0, 10, perSecond);
      expect(old.allowed).toBe(false);
      expect(retryAfterSeconds(tokens, perSecond)).toBe(old.retryAfterSeconds);
      const lease = newKeyLease();
      applyGrant(lease, 0, tokens, 0, perSecond);
      expect(spendLocal(lease, 0)).toBe('refuse');
      expect(localRetryAfterSeconds(lease, 0)).toBe(old.retryAfterSeconds);
    }
  });
});

describe('a process lease', () => {
  it('spends held tokens until they run out or expire, then asks', () => {
    const lease = newKeyLease();
    expect(spendLocal(lease, 0)).toBe('ask');
    applyGrant(lease, 2, 50, 0, 20);
    expect(spendLocal(lease, 1)).toBe('allow');
    expect(spendLocal(lease, 2)).toBe('allow');
    expect(spendLocal(lease, 3)).toBe('ask');
    applyGrant(lease, 3, 50, 10, 20);
    expect(spendLocal(lease, 10 + LEASE_MS)).toBe('ask');
    expect(expireLease(lease, 10 + LEASE_MS)).toBe(3);
    expect(lease.tokens).toBe(0);
  });

  it('refuses while the bucket is known empty, then asks again', () => {
    const lease = newKeyLease();
    applyGrant(lease, 0, 0.5, 0, 1);
    expect(spendLocal(lease, 0)).toBe('refuse');
    expect(spendLocal(lease, 499)).toBe('refuse');
    expect(spendLocal(lease, 500)).toBe('ask');
    // Nearly a whole token: still a short wait, not a statement per request.
    applyGrant(lease, 0, 0.999, 1_000, 1);
    expect(spendLocal(lease, 1_000 + EMPTY_MIN_MS - 1)).toBe('refuse');
    expect(spendLocal(lease, 1_000 + EMPTY_MIN_MS)).toBe('ask');
  });

  it('grows while leases are used up fast, shrinks when they expire unspent, never past the cap', () => {
    const lease = newKeyLease();
    let t = 1_000;
    const sizes: number[] = [];
    for (let i = 0; i < 8; i++) {
      const want = nextSize(lease, t, 12, 0);
      sizes.push(want);
      applyGrant(lease, want, 100, t, 20);
      lease.tokens = 0;
      t += 10;
    }
    expect(sizes).toEqual([1, 2, 4, 8, 12, 12, 12, 12]);
    applyGrant(lease, 12, 100, t, 20);
    expect(expireLease(lease, t + LEASE_MS)).toBe(12);
    expect(lease.size).toBe(6);
    // A slow spender keeps its size; waiting requests raise what is asked for.
    t += 5 * LEASE_MS;
    lease.grantedAtMs = t - LEASE_MS;
    expect(nextSize(lease, t, 12, 0)).toBe(6);
    expect(nextSize(lease, t, 12, 9)).toBe(9);
    // A refusal does not count as a lease used up fast.
    applyGrant(lease, 0, 0.1, t, 20);
    expect(nextSize(lease, t + 1, 12, 0)).toBe(6);
  });
});

/** Processes with leases sharing one bucket, each request at a random process, the bucket as the SQL keeps it. */
function simulate(opts: {
  processes: number;
  capacity: number;
  perSecond: number;
  requestsPerMs: number;
  durationMs: number;
  seed: number;
}) {
  let seed = opts.seed;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const bucket = { tokens: opts.capacity, updatedMs: 0 };
  const leases: KeyLease[] = Array.from({ length: opts.processes }, newKeyLease);
  const max = maxLease(opts.capacity);
  let allowed = 0;
  let statements = 0;
  for (let t = 0; t <= opts.durationMs; t++) {
    for (let r = 0; r < opts.requestsPerMs; r++) {
      const lease = leases[Math.floor(random() * leases.length)]!;
      let verdict = spendLocal(lease, t);
      if (verdict === 'ask') {
        bucket.tokens += expireLease(lease, t);
        const level = bucketLevel(bucket.tokens, t - bucket.updatedMs, opts.capacity, opts.perSecond);
        const granted = grantOf(level, nextSize(lease, t, max, 1));
        Object.assign(bucket, { tokens: level - granted, updatedMs: t });
        statements++;
        applyGrant(lease, granted, level - granted, t, opts.perSecond);
        verdict = spendLocal(lease, t);
      }
      if (verdict === 'allow') allowed++;
    }
  }
  return { allowed, statements };
}

describe('processes sharing one bucket', () => {
  it('never allow more than capacity + refill × elapsed together, and close to it under load', () => {
    for (const processes of [1, 3, 8]) {
      const { allowed, statements } = simulate({
        processes,
        capacity: 100,
        perSecond: 20,
        requestsPerMs: 2,
        durationMs: 5_000,
        seed: processes,
      });
      expect(allowed).toBeLessThanOrEqual(100 + 20 * 5);
      expect(allowed).toBeGreaterThan(0.8 * (100 + 20 * 5));
      // Refused requests mostly cost no statement: the bucket is known empty until its next token.
      expect(statements).toBeLessThan(allowed * 2);
    }
  });

  it('with headroom, a statement serves many requests', () => {
    const { allowed, statements } = simulate({ processes: 4, capacity: 1e9, perSecond: 1e9, requestsPerMs: 5, durationMs: 2_000, seed: 7 });
    expect(allowed).toBe(5 * 2_001);
    expect(statements * 100).toBeLessThan(allowed);
  });
});
