/** The launchers' supervisor backoff (dev/children.ts RespawnBackoff), on an injected clock: no real waiting. */
import { describe, expect, it } from 'vitest';
import { RESPAWN_MAX_MS, RESPAWN_STABLE_MS, RespawnBackoff } from '../../dev/children.js';

function clocked() {
  let now = 1_000_000;
  return { backoff: new RespawnBackoff(() => now), now: () => now, advance: (ms: number) => (now += ms) };
}

describe('the supervisor backoff', () => {
  it('waits 1 s after a first crash and doubles at each crash in a row: 1, 2, 4, 8, 16 s', () => {
    const { backoff, now } = clocked();
    expect(Array.from({ length: 5 }, () => backoff.afterCrash(now()))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
  });

  it('caps the wait at 30 s however many crashes follow', () => {
    const { backoff, now } = clocked();
    const waits = Array.from({ length: 12 }, () => backoff.afterCrash(now()));
    expect(waits.slice(5)).toEqual(Array(7).fill(RESPAWN_MAX_MS));
    expect(Math.max(...waits)).toBe(30_000);
  });

  it('doubles on failed starts too, and a failed start never resets it', () => {
    const { backoff, now } = clocked();
    expect(backoff.afterCrash(now())).toBe(1_000);
    expect([backoff.afterFailedStart(), backoff.afterFailedStart(), backoff.afterFailedStart()]).toEqual([2_000, 4_000, 8_000]);
    expect(backoff.afterCrash(now())).toBe(16_000);
  });

  it('starts again at 1 s after a process that ran a minute crashes, even from the cap', () => {
    const { backoff, now, advance } = clocked();
    for (let i = 0; i < 8; i++) backoff.afterCrash(now());
    expect(backoff.afterCrash(now())).toBe(30_000);
    const upSince = now();
    advance(RESPAWN_STABLE_MS);
    expect(backoff.afterCrash(upSince)).toBe(1_000);
    expect(backoff.afterCrash(now())).toBe(2_000);
  });

  it('keeps doubling after a process that ran a moment less than a minute crashes', () => {
    const { backoff, now, advance } = clocked();
    expect([backoff.afterCrash(now()), backoff.afterCrash(now())]).toEqual([1_000, 2_000]);
    const upSince = now();
    advance(RESPAWN_STABLE_MS - 1);
    expect(backoff.afterCrash(upSince)).toBe(4_000);
  });
});
