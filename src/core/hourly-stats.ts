/**
 * One hour of an endpoint's stats as GET /webhooks/{id}/stats answers it, from that hour's
 * rollup (src/db/endpoint-hourly-stats.ts). Pure.
 */
export interface HourCounts {
  hour: Date;
  attemptsSucceeded: number;
  attemptsFailed: number;
  attemptMsTotal: number;
  deliveriesExhausted: number;
  deliveriesLimited: number;
}

export interface HourStats {
  hour: string;
  /** Attempts without an error. */
  successes: number;
  /** Attempts with an error. */
  failures: number;
  /** Deliveries that ended `exhausted` in the hour (no attempt of theirs counted there). */
  exhausted: number;
  /** Deliveries created `limited` (Free plan) in the hour. */
  limited: number;
  /** The hour's attempts' mean duration, whole milliseconds; null without attempts. */
  mean_duration_ms: number | null;
}

export function hourStatsOf(c: HourCounts): HourStats {
  const attempts = c.attemptsSucceeded + c.attemptsFailed;
  return {
    hour: c.hour.toISOString(),
    successes: c.attemptsSucceeded,
    failures: c.attemptsFailed,
    exhausted: c.deliveriesExhausted,
    limited: c.deliveriesLimited,
    mean_duration_ms: attempts === 0 ? null : Math.round(c.attemptMsTotal / attempts),
  };
}
