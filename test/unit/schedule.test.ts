import { describe, expect, it } from 'vitest';
import { endpointHealthOf } from '../../src/core/health.js';
import {
  expiryDue,
  failingNotBefore,
  idleWait,
  nextPostAt,
  nextWakeAt,
  RECONCILE_MS,
  roundLimit,
  type ScheduleState,
} from '../../src/core/schedule.js';

const MIN = 60_000;
const T = Date.UTC(2026, 0, 1);
const healthy: ScheduleState = {
  active: true,
  health: 'healthy',
  failureStreak: 0,
  sending: true,
  lastFailureAtMs: null,
  nextDueAtMs: null,
  nextExpiryAtMs: null,
};
const failing = (streak: number, extra: Partial<ScheduleState> = {}): ScheduleState => ({
  ...healthy,
  failureStreak: streak,
  lastFailureAtMs: T,
  ...extra,
});

describe('round size', () => {
  it('is a batch while healthy and one POST while failing', () => {
    // Up to 100 000 POSTs per session while healthy: the session ends on its own long before.
    expect(roundLimit(healthy)).toBe(100_000);
    expect(roundLimit(failing(1))).toBe(1);
  });
});

describe('failingNotBefore', () => {
  it('is null at streak 0, whatever the last failure', () => {
    expect(failingNotBefore(healthy)).toBeNull();
    expect(failingNotBefore({ ...healthy, lastFailureAtMs: T })).toBeNull();
  });

  it('is the last failure plus the curve at the streak', () => {
    expect(failingNotBefore(failing(1))).toBe(T + MIN);
    expect(failingNotBefore(failing(4))).toBe(T + 8 * MIN);
    expect(failingNotBefore(failing(14))).toBe(T + 60 * MIN);
  });

  it('is null when a streak was carried without its failure time', () => {
    expect(failingNotBefore(failing(3, { lastFailureAtMs: null }))).toBeNull();
    expect(failingNotBefore(failing(3, { lastFailureAtMs: undefined }))).toBeNull();
  });
});

describe('nextPostAt (next_attempt_at)', () => {
  it('is null while the endpoint does not send: inactive, unverified or paused', () => {
    for (const s of [{ ...healthy, active: false }, { ...healthy, health: 'unverified' as const }, failing(15, { health: 'paused' })]) {
      expect(nextPostAt({ ...s, nextDueAtMs: T })).toBeNull();
    }
  });

  it('is null when no delivery is due', () => {
    expect(nextPostAt(healthy)).toBeNull();
    expect(nextPostAt(failing(2))).toBeNull();
  });

  it('at streak 0 is the earliest due delivery', () => {
    expect(nextPostAt({ ...healthy, nextDueAtMs: T + 5 * MIN })).toBe(T + 5 * MIN);
  });

  it('while failing is the later of the due delivery and the endpoint curve', () => {
    expect(nextPostAt(failing(3, { nextDueAtMs: T }))).toBe(T + 4 * MIN);
    expect(nextPostAt(failing(3, { nextDueAtMs: T + 30 * MIN }))).toBe(T + 30 * MIN);
  });

  it('follows the endpoint, not the last admission seen (a degraded endpoint still sends)', () => {
    expect(nextPostAt(failing(6, { health: 'degraded', sending: false, nextDueAtMs: T }))).toBe(T + 32 * MIN);
  });
});

describe('nextWakeAt', () => {
  it('while sending is the next POST; a held expiry does not count', () => {
    expect(nextWakeAt(failing(1, { nextDueAtMs: T, nextExpiryAtMs: T + 1 }))).toBe(T + MIN);
    expect(nextWakeAt({ ...healthy, nextExpiryAtMs: T })).toBeNull();
  });

  it('while not sending is the next hold expiry, never a POST', () => {
    const held = failing(15, { health: 'paused', sending: false, nextDueAtMs: T });
    expect(nextWakeAt({ ...held, nextExpiryAtMs: T + 14 * 24 * 60 * MIN })).toBe(T + 14 * 24 * 60 * MIN);
    expect(nextWakeAt(held)).toBeNull();
    expect(nextWakeAt({ ...healthy, sending: undefined, nextDueAtMs: T })).toBeNull();
  });
});

describe('idleWait', () => {
  it('with nothing scheduled waits the reconcile interval, then re-reads the endpoint', () => {
    expect(idleWait(healthy, T)).toEqual({ delayMs: RECONCILE_MS, reconcile: true });
  });

  it('waits until a POST or an expiry that comes before the reconcile, without re-reading', () => {
    expect(idleWait(failing(2, { nextDueAtMs: T }), T)).toEqual({ delayMs: 2 * MIN, reconcile: false });
    const held = { ...healthy, active: false, sending: false };
    expect(idleWait({ ...held, nextExpiryAtMs: T + 10 * MIN }, T)).toEqual({ delayMs: 10 * MIN, reconcile: false });
  });

  it('an expiry days away is preceded by hourly reconciles', () => {
    const held = { ...healthy, active: false, sending: false, nextExpiryAtMs: T + 3 * 24 * 60 * MIN };
    expect(idleWait(held, T)).toEqual({ delayMs: RECONCILE_MS, reconcile: true });
    expect(idleWait({ ...held, nextExpiryAtMs: T + RECONCILE_MS }, T)).toEqual({ delayMs: RECONCILE_MS, reconcile: true });
  });

  it('something already due is no wait at all', () => {
    expect(idleWait({ ...healthy, nextDueAtMs: T - MIN }, T)).toEqual({ delayMs: -MIN, reconcile: false });
    expect(idleWait({ ...healthy, nextDueAtMs: T }, T).delayMs).toBe(0);
  });
});

describe('expiryDue', () => {
  it('is whether the next hold expiry has come', () => {
    expect(expiryDue(healthy, T)).toBe(false);
    expect(expiryDue({ ...healthy, nextExpiryAtMs: T + 1 }, T)).toBe(false);
    expect(expiryDue({ ...healthy, nextExpiryAtMs: T }, T)).toBe(true);
    expect(expiryDue({ ...healthy, nextExpiryAtMs: T - 1 }, T)).toBe(true);
  });
});

describe('endpointHealthOf', () => {
  it('fills observations a state has not made with null and keeps the rest', () => {
    expect(endpointHealthOf({ health: 'healthy', failureStreak: 0 })).toEqual({
      health: 'healthy',
      failureStreak: 0,
      lastSuccessAtMs: null,
      lastFailureAtMs: null,
      lastResponseCode: null,
      streakStartedAtMs: null,
      pausedAtMs: null,
    });
    expect(
      endpointHealthOf({
        health: 'paused',
        failureStreak: 15,
        lastFailureAtMs: T,
        pausedAtMs: T,
        streakStartedAtMs: T - 1,
        lastResponseCode: 500,
      }),
    ).toMatchObject({ pausedAtMs: T, streakStartedAtMs: T - 1, lastResponseCode: 500 });
  });
});
