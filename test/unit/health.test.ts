import { describe, expect, it } from 'vitest';
import { afterFailure, afterSuccess, sends, type HealthState } from '../../src/core/health.js';
import { retryDelayMs } from '../../src/core/retry-curve.js';

describe('retry curve', () => {
  it('is 1, 2, 4, 8, 16, 32, 60 minutes, then 60 forever', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 50].map((n) => retryDelayMs(n) / 60_000)).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
  });
});

describe('health transitions', () => {
  it('alerts at 5, 10 and 15, degrades at 5 and pauses at 15', () => {
    let s: HealthState = { health: 'healthy', failureStreak: 0 };
    const seen: Array<[number, string, number | null, boolean]> = [];
    for (let i = 0; i < 16; i++) {
      const t = afterFailure(s);
      seen.push([t.failureStreak, t.health, t.alert, t.paused]);
      s = t;
    }
    expect(seen.filter(([, , alert]) => alert !== null).map(([n]) => n)).toEqual([5, 10, 15]);
    expect(seen[3]).toEqual([4, 'healthy', null, false]);
    expect(seen[4]).toEqual([5, 'degraded', 5, false]);
    expect(seen[14]).toEqual([15, 'paused', 15, true]);
    expect(seen[15]).toEqual([16, 'paused', null, false]);
  });

  it('a success resets the streak and the health', () => {
    expect(afterSuccess({ health: 'degraded', failureStreak: 9 })).toEqual({
      health: 'healthy',
      failureStreak: 0,
      alert: null,
      paused: false,
    });
  });

  it('sends only when active and healthy or degraded', () => {
    expect(sends(true, 'healthy')).toBe(true);
    expect(sends(true, 'degraded')).toBe(true);
    expect(sends(true, 'paused')).toBe(false);
    expect(sends(true, 'unverified')).toBe(false);
    expect(sends(false, 'healthy')).toBe(false);
  });
});
