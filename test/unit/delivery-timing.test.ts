import { describe, expect, it } from 'vitest';
import { nextAttemptOf, pacingApplies, type DeliveryTiming, type EndpointPacing } from '../../src/core/delivery-timing.js';

const MIN = 60_000;
const T = Date.UTC(2026, 10, 23, 12, 0, 0);
const healthy: EndpointPacing = {
  active: true,
  health: 'healthy',
  failureStreak: 0,
  lastFailureAtMs: null,
  deleted: false,
  firstInLineId: 'a',
};
const failing = (streak: number, extra: Partial<EndpointPacing> = {}): EndpointPacing => ({
  ...healthy,
  health: streak >= 5 ? 'degraded' : 'healthy',
  failureStreak: streak,
  lastFailureAtMs: T,
  ...extra,
});
const d = (id: string, nextAttemptAtMs: number | null, status = 'failed', hasEvent = true): DeliveryTiming => ({
  id,
  status,
  hasEvent,
  nextAttemptAtMs,
});

describe('a delivery’s truthful next attempt', () => {
  // [case, delivery, endpoint, expected time, expected reason]
  const rows: [string, DeliveryTiming, EndpointPacing | undefined, number | null, string | null][] = [
    ['healthy endpoint: its own retry time', d('a', T + MIN), healthy, T + MIN, null],
    ['healthy endpoint, due now and not first: its own time (sent concurrently)', d('b', T), healthy, T, null],
    ['failing, first in line, own time earlier: the endpoint’s next POST', d('a', T + MIN), failing(4), T + 8 * MIN, 'endpoint_pacing'],
    ['failing, first in line, own time later: its own time', d('a', T + 20 * MIN), failing(2), T + 20 * MIN, null],
    ['failing, behind others: at least the endpoint’s next POST', d('b', T + MIN), failing(3), T + 4 * MIN, 'endpoint_queue'],
    [
      'failing, behind others with a later own time: its own time, still queued',
      d('b', T + 30 * MIN),
      failing(3),
      T + 30 * MIN,
      'endpoint_queue',
    ],
    ['failing past the curve: 60 minutes after the last failure', d('a', T), failing(12), T + 60 * MIN, 'endpoint_pacing'],
    [
      'resent (due now) on a failing endpoint: its next POST, not now',
      d('a', T + 2 * MIN, 'pending'),
      failing(5),
      T + 16 * MIN,
      'endpoint_pacing',
    ],
    ['paused endpoint: none', d('a', T), failing(15, { health: 'paused' }), null, 'endpoint_paused'],
    ['inactive endpoint: none', d('a', T), { ...healthy, active: false }, null, 'endpoint_inactive'],
    ['inactive wins over paused', d('a', T), failing(15, { health: 'paused', active: false }), null, 'endpoint_inactive'],
    ['unverified endpoint: none', d('a', T, 'pending'), { ...healthy, health: 'unverified' }, null, 'endpoint_unverified'],
    ['success: terminal, untouched', d('a', null, 'success'), failing(3), null, null],
    ['exhausted: terminal, untouched', d('a', null, 'exhausted'), { ...healthy, active: false }, null, null],
    ['test send: never retried, untouched', d('a', null, 'failed', false), { ...healthy, active: false }, null, null],
    ['deleted endpoint: its own value', d('a', T), { ...healthy, deleted: true, active: false }, T, null],
    ['endpoint unknown: its own value', d('a', T), undefined, T, null],
  ];
  it.each(rows)('%s', (_case, delivery, endpoint, at, reason) => {
    expect(nextAttemptOf(delivery, endpoint)).toEqual({ nextAttemptAtMs: at, reason });
  });
});

describe('whether a delivery’s endpoint must be read for its next attempt', () => {
  it('only for an open delivery of an event: a terminal one or a test send keeps its own value whatever the endpoint', () => {
    expect(pacingApplies(d('a', T, 'pending'))).toBe(true);
    expect(pacingApplies(d('a', T, 'failed'))).toBe(true);
    for (const status of ['success', 'exhausted']) expect(pacingApplies(d('a', null, status))).toBe(false);
    expect(pacingApplies(d('a', null, 'failed', false))).toBe(false);
    // And where it says no, the endpoint's state indeed changes nothing.
    const paused = failing(15, { health: 'paused', active: false });
    for (const row of [d('a', null, 'exhausted'), d('a', T, 'success'), d('a', null, 'failed', false)]) {
      expect(pacingApplies(row)).toBe(false);
      expect(nextAttemptOf(row, paused)).toEqual(nextAttemptOf(row, undefined));
    }
  });
});
