/**
 * Per endpoint and UTC hour, what its stats and the console's chart show (migration 0030):
 * attempts are counted by a trigger on `delivery_attempts`, deliveries that end without an
 * attempt by the statement that ends them (`countEndedSql`, `countLimitedDeliveries`).
 */
import type { HourCounts } from '../core/hourly-stats.js';
import type { Queryable } from './pool.js';

/** How a delivery ended without an attempt: the rollup column that counts it. */
export type EndedWithoutAttempt = 'exhausted' | 'limited';

const COLUMN: Record<EndedWithoutAttempt, string> = { exhausted: 'deliveries_exhausted', limited: 'deliveries_limited' };

/**
 * A CTE (named `<cte>_counted`) that adds the rows the data-modifying CTE `cte` returned (with
 * `account_id` and `endpoint_id`) to their endpoints' current hour as `outcome`, in the statement
 * that ended them. Upserted in key order, so two such statements cannot deadlock on the rows.
 */
export function countEndedSql(cte: string, outcome: EndedWithoutAttempt): string {
  const column = COLUMN[outcome];
  return `${cte}_counted AS (
    INSERT INTO endpoint_hourly_stats AS s (account_id, endpoint_id, hour, ${column})
    SELECT account_id, endpoint_id, date_trunc('hour', now(), 'UTC'), count(*) FROM ${cte}
    GROUP BY account_id, endpoint_id ORDER BY endpoint_id
    ON CONFLICT (endpoint_id, hour) DO UPDATE SET ${column} = s.${column} + excluded.${column}
  )`;
}

/** Deliveries just inserted `limited`, counted in the current hour, in the inserting transaction. */
export async function countLimitedDeliveries(tx: Queryable, accountId: string, endpointIds: readonly string[]): Promise<void> {
  if (endpointIds.length === 0) return;
  await tx.query(
    `WITH ended AS (SELECT $1::uuid AS account_id, endpoint_id FROM unnest($2::uuid[]) AS e(endpoint_id)), ${countEndedSql('ended', 'limited')}
     SELECT 1`,
    [accountId, endpointIds],
  );
}

/**
 * The endpoint's rollups for the last `hours` UTC hours, the current (partial) hour last, every
 * hour present (zeros included): at most `hours` rows read by primary key, whatever its history.
 * Undefined unless the endpoint is the Account's and not deleted (checked in the same statement).
 */
export async function endpointHourlyStats(
  db: Queryable,
  accountId: string,
  endpointId: string,
  hours: number,
): Promise<HourCounts[] | undefined> {
  const { rows } = await db.query<{ hour: Date; ok: number; failed: number; ms: string; exhausted: number; limited: number }>({
    name: 'endpoint_hourly_stats',
    text: `WITH win AS (SELECT date_trunc('hour', now(), 'UTC') - ($3::int - 1) * interval '1 hour' AS since)
     SELECT h.hour, coalesce(s.attempts_succeeded, 0) AS ok, coalesce(s.attempts_failed, 0) AS failed, coalesce(s.attempt_ms_total, 0) AS ms,
            coalesce(s.deliveries_exhausted, 0) AS exhausted, coalesce(s.deliveries_limited, 0) AS limited
     FROM endpoints e CROSS JOIN win CROSS JOIN generate_series(win.since, win.since + ($3::int - 1) * interval '1 hour', interval '1 hour') AS h(hour)
     LEFT JOIN endpoint_hourly_stats s ON s.endpoint_id = e.id AND s.hour = h.hour
     WHERE e.id = $2 AND e.account_id = $1 AND e.deleted_at IS NULL
     ORDER BY h.hour`,
    values: [accountId, endpointId, hours],
  });
  if (rows.length === 0) return undefined;
  return rows.map((r) => ({
    hour: r.hour,
    attemptsSucceeded: r.ok,
    attemptsFailed: r.failed,
    attemptMsTotal: Number(r.ms),
    deliveriesExhausted: r.exhausted,
    deliveriesLimited: r.limited,
  }));
}

/**
 * Retention: removes the rollups of hours that start before `cutoff` (the delivery records'
 * window, DELIVERY_RETENTION_DAYS). Returns how many rows went.
 */
export async function deleteRollupsBefore(db: Queryable, cutoff: Date): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM endpoint_hourly_stats WHERE hour < $1`, [cutoff]);
  return rowCount ?? 0;
}
