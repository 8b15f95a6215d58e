/** An hour of endpoint stats from its rollup: counts as they are, the mean duration of its attempts. */
import { describe, expect, it } from 'vitest';
import { hourStatsOf } from '../../src/core/hourly-stats.js';

const hour = new Date('2026-11-21T11:00:00Z');
const zero = { hour, attemptsSucceeded: 0, attemptsFailed: 0, attemptMsTotal: 0, deliveriesExhausted: 0, deliveriesLimited: 0 };

describe('hourStatsOf', () => {
  it('passes the counts through under the route names', () => {
    expect(
      hourStatsOf({
        ...zero,
        attemptsSucceeded: 12,
        attemptsFailed: 1,
        attemptMsTotal: 1300,
        deliveriesExhausted: 2,
        deliveriesLimited: 3,
      }),
    ).toEqual({
      hour: '2026-11-21T11:00:00.000Z',
      successes: 12,
      failures: 1,
      exhausted: 2,
      limited: 3,
      mean_duration_ms: 100,
    });
  });

  it('averages over successes and failures alike, rounded to whole milliseconds', () => {
    expect(hourStatsOf({ ...zero, attemptsSucceeded: 2, attemptsFailed: 1, attemptMsTotal: 1000 }).mean_duration_ms).toBe(333);
    expect(hourStatsOf({ ...zero, attemptsFailed: 2, attemptMsTotal: 5 }).mean_duration_ms).toBe(3);
  });

  it('has no mean for an hour without attempts, even with deliveries that ended in it', () => {
    expect(hourStatsOf({ ...zero, deliveriesExhausted: 4 }).mean_duration_ms).toBeNull();
  });
});
