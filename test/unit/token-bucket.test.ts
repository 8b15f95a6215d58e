import { describe, expect, it } from 'vitest';
import { take } from '../../src/core/token-bucket.js';

describe('token bucket', () => {
  it('allows a burst of capacity, then refuses with a retry-after, then refills', () => {
    let bucket;
    for (let i = 0; i < 3; i++) {
      const r = take(bucket, 0, 3, 1);
      expect(r.allowed).toBe(true);
      bucket = r.bucket;
    }
    const refused = take(bucket, 0, 3, 1);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBe(1);
    expect(take(refused.bucket, 1000, 3, 1).allowed).toBe(true);
  });

  it('never refills beyond capacity', () => {
    const r = take({ tokens: 0, updatedMs: 0 }, 3_600_000, 2, 10);
    expect(r.bucket.tokens).toBe(1);
  });
});
