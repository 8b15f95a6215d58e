import type { EveryFieldListed } from './column-lists.js';
import type { AccountId, EndpointId } from '../core/ids.js';
import { DomainError } from '../core/domain-error.js';
import { newEndpoint, type afterTest, type Health } from '../core/health.js';
import type { RoutableEndpoint } from '../core/admission.js';
import type { PageKey } from '../core/paging.js';
import { inPageOrder, keyset, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export type HealthStatus = Health;

export interface EndpointRow {
  id: EndpointId;
  account_id: AccountId;
  customer_id: string | null;
  url: string;
  events: string[];
  active: boolean;
  secret_ciphertext: Buffer;
  authorization_ciphertext: Buffer | null;
  health_status: HealthStatus;
  failure_streak: number;
  verified_at: Date | null;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  last_response_code: number | null;
  next_attempt_at: Date | null;
  paused_at: Date | null;
  /** Moves with every change that invalidates a verification (url, Authorization). */
  config_version: number;
  /** At most this many POSTs per second; null: unlimited. */
  rate_limit: number | null;
  /** The tenant's free-text label; null when none. */
  description: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
  page_key: PageKey;
}

const COLUMNS = `*, ${pageKeyColumn()}`;
/** The table's columns of EndpointRow by name, for statements prepared once per connection (see EVENT_COLUMNS in events.ts). */
const STORED_COLUMNS = [
  'id',
  'account_id',
  'customer_id',
  'url',
  'events',
  'active',
  'secret_ciphertext',
  'authorization_ciphertext',
  'health_status',
  'failure_streak',
  'verified_at',
  'last_success_at',
  'last_failure_at',
  'last_response_code',
  'next_attempt_at',
  'paused_at',
  'config_version',
  'rate_limit',
  'description',
  'created_at',
  'updated_at',
  'deleted_at',
] as const satisfies readonly (keyof EndpointRow)[];
const everyStoredColumn: EveryFieldListed<EndpointRow, (typeof STORED_COLUMNS)[number], 'page_key'> = true;
void everyStoredColumn;
const NAMED_COLUMNS = `${STORED_COLUMNS.join(', ')}, ${pageKeyColumn()}`;

/** The EndpointRow columns of the endpoints row `alias`, each named `<prefix><column>`, for a select list beside other tables' columns. */
export function endpointColumnsAs(alias: string, prefix: string): string {
  return [...STORED_COLUMNS.map((c) => `${alias}.${c} AS ${prefix}${c}`), pageKeyColumn(alias, `${prefix}page_key`)].join(', ');
}

/** The EndpointRow a row selected with endpointColumnsAs carries; undefined when its id is null (no such endpoint). */
export function endpointFromColumns(row: Record<string, unknown>, prefix: string): EndpointRow | undefined {
  if (row[`${prefix}id`] == null) return undefined;
  const out: Record<string, unknown> = {};
  for (const c of [...STORED_COLUMNS, 'page_key']) out[c] = row[`${prefix}${c}`];
  return out as unknown as EndpointRow;
}

/**
 * Inserts an endpoint unless the account is at its limit. The account row is locked so
 * two concurrent creations cannot both slip under the limit.
 */
export async function insertEndpoint(
  db: Queryable,
  e: {
    accountId: string;
    customerId: string | null;
    url: string;
    events: string[];
    active: boolean;
    secretCiphertext: Buffer;
    rateLimit?: number | null;
    description?: string | null;
    limit: number;
  },
): Promise<EndpointRow> {
  const state = newEndpoint(e.active);
  await db.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [e.accountId]);
  const { rows: count } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM endpoints WHERE account_id = $1 AND deleted_at IS NULL`,
    [e.accountId],
  );
  if (count[0]!.n >= e.limit) throw new DomainError(422, 'endpoint_limit_reached', `an Account can have at most ${e.limit} endpoints`);
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO endpoints (account_id, customer_id, url, events, active, health_status, failure_streak, secret_ciphertext, rate_limit, description)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
    [
      e.accountId,
      e.customerId,
      e.url,
      e.events,
      state.active,
      state.health,
      state.failureStreak,
      e.secretCiphertext,
      e.rateLimit ?? null,
      e.description ?? null,
    ],
  );
  return rows[0]!;
}

/** The live endpoints of an account with what routing and admission need (SPEC 2.2, 3.1). */
export async function listRoutableEndpoints(db: Queryable, accountId: string): Promise<RoutableEndpoint[]> {
  const { rows } = await db.query<RoutableEndpoint>(
    `SELECT id, customer_id, events, active, health_status FROM endpoints WHERE account_id = $1 AND deleted_at IS NULL`,
    [accountId],
  );
  return rows;
}

/** The endpoint when it exists, is not deleted, and belongs to the account. */
export async function getEndpoint(
  db: Queryable,
  accountId: string,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<EndpointRow | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM endpoints WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    [id, accountId],
  );
  return rows[0];
}

/** Any endpoint by id, deleted or not: for the worker, which is not bound to a tenant. */
export async function getEndpointById(db: Queryable, id: string): Promise<EndpointRow | undefined> {
  // Read before each wave of POSTs: prepared, since Postgres planned it longer than it ran it.
  const { rows } = await db.query<EndpointRow>({
    name: 'endpoint_by_id',
    text: `SELECT ${NAMED_COLUMNS} FROM endpoints WHERE id = $1`,
    values: [id],
  });
  return rows[0];
}

/** Several endpoints by id in one statement (a worker's sessions read theirs together); missing ones are absent. */
export async function getEndpointsByIds(db: Queryable, ids: readonly string[]): Promise<EndpointRow[]> {
  // Prepared: a worker's sessions read their endpoints through it before every POST.
  const { rows } = await db.query<EndpointRow>({
    name: 'endpoints_by_ids',
    text: `SELECT ${NAMED_COLUMNS} FROM endpoints WHERE id = ANY($1::uuid[])`,
    values: [ids],
  });
  return rows;
}

export async function listEndpoints(
  db: Queryable,
  accountId: string,
  page: { limit: number; after?: PageKey; before?: PageKey },
): Promise<EndpointRow[]> {
  const params: unknown[] = [accountId, page.limit + 1];
  const ks = keyset(page, params);
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM endpoints WHERE account_id = $1 AND deleted_at IS NULL ${ks.clause ? `AND ${ks.clause}` : ''}
     ORDER BY created_at ${ks.order}, id ${ks.order} LIMIT $2`,
    params,
  );
  return inPageOrder(rows, ks);
}

export interface EndpointChanges {
  url?: string;
  events?: string[];
  active?: boolean;
  customerId?: string | null;
  secretCiphertext?: Buffer;
  /** null removes the stored value. */
  authorizationCiphertext?: Buffer | null;
  /** null removes the throttle. */
  rateLimit?: number | null;
  /** null removes the description. */
  description?: string | null;
  /** Set when the url or Authorization changed: the verification no longer holds. */
  invalidateVerification?: boolean;
  /** Set when the change stops the endpoint sending: it has no next attempt from this commit on. */
  clearNextAttempt?: boolean;
}

export async function updateEndpoint(db: Queryable, accountId: string, id: string, c: EndpointChanges): Promise<EndpointRow | undefined> {
  const sets: string[] = [];
  const params: unknown[] = [id, accountId];
  const set = (column: string, value: unknown) => {
    params.push(value);
    sets.push(`${column} = $${params.length}`);
  };
  if (c.url !== undefined) set('url', c.url);
  if (c.events !== undefined) set('events', c.events);
  if (c.active !== undefined) set('active', c.active);
  if (c.customerId !== undefined) set('customer_id', c.customerId);
  if (c.secretCiphertext !== undefined) set('secret_ciphertext', c.secretCiphertext);
  if (c.authorizationCiphertext !== undefined) set('authorization_ciphertext', c.authorizationCiphertext);
  if (c.rateLimit !== undefined) set('rate_limit', c.rateLimit);
  if (c.description !== undefined) set('description', c.description);
  if (c.invalidateVerification) sets.push(`health_status = 'unverified'`, `verified_at = NULL`, 'config_version = config_version + 1');
  if (c.clearNextAttempt) sets.push('next_attempt_at = NULL');
  if (sets.length === 0) return getEndpoint(db, accountId, id);
  sets.push('updated_at = now()');
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints SET ${sets.join(', ')} WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    params,
  );
  return rows[0];
}

export async function softDeleteEndpoint(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE endpoints SET deleted_at = now(), active = false, next_attempt_at = NULL, updated_at = now()
     WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`,
    [id, accountId],
  );
  return rowCount === 1;
}

/**
 * A 2xx signed test of the configuration at `configVersion`: verified, with the state `afterTest`
 * gives, only if that is still the configuration (a PATCH of url or Authorization committed while
 * the test was in flight leaves it unverified). Otherwise the 2xx is recorded as an observation
 * only. Undefined when the endpoint is gone.
 */
export async function recordVerification(
  db: Queryable,
  id: string,
  configVersion: number,
  responseCode: number,
  state: NonNullable<ReturnType<typeof afterTest>>,
): Promise<{ row: EndpointRow; verified: boolean } | undefined> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE endpoints SET verified_at = now(), health_status = $3, failure_streak = $4, active = $5, paused_at = $6,
       last_success_at = now(), last_response_code = $2, updated_at = now()
     WHERE id = $1 AND deleted_at IS NULL AND config_version = $7 RETURNING ${COLUMNS}`,
    [id, responseCode, state.health, state.failureStreak, state.active, state.pausedAt, configVersion],
  );
  if (rows[0]) return { row: rows[0], verified: true };
  const { rows: observed } = await db.query<EndpointRow>(
    `UPDATE endpoints SET last_success_at = now(), last_response_code = $2, updated_at = now()
     WHERE id = $1 AND deleted_at IS NULL RETURNING ${COLUMNS}`,
    [id, responseCode],
  );
  return observed[0] ? { row: observed[0], verified: false } : undefined;
}

/** A failed test is an observation, but it moves neither the streak nor the health. */
export async function recordTestFailure(db: Queryable, id: string, responseCode: number | null): Promise<void> {
  await db.query(`UPDATE endpoints SET last_failure_at = now(), last_response_code = $2, updated_at = now() WHERE id = $1`, [
    id,
    responseCode,
  ]);
}

/** The endpoint row (`alias.`, or unqualified) sends as committed now: `sends` (src/core/health.ts) in SQL. */
export const sendsNowSql = (alias?: string): string => {
  const c = alias ? `${alias}.` : '';
  return `${c}active AND ${c}health_status IN ('healthy', 'degraded')`;
};

/** A deactivation committed after the workflow looked wins: an endpoint that does not send has no next attempt. */
const NEXT_ATTEMPT_IF_SENDING = (value: string) => `CASE WHEN ${sendsNowSql()} THEN ${value}::timestamptz END`;

/** The workflow's schedule changed outside a delivery round (a release, a hold, a verification). */
export async function recordNextAttempt(db: Queryable, id: string, nextAttemptAt: Date | null): Promise<void> {
  await db.query(
    `UPDATE endpoints SET next_attempt_at = ${NEXT_ATTEMPT_IF_SENDING('$2')} WHERE id = $1 AND deleted_at IS NULL AND next_attempt_at IS DISTINCT FROM $2`,
    [id, nextAttemptAt],
  );
}

export interface EndpointHealthRecord {
  health: HealthStatus;
  failureStreak: number;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  lastResponseCode: number | null;
  nextAttemptAt: Date | null;
  pausedAt: Date | null;
}

/**
 * The endpoint workflow's verdict after real deliveries. A verification (2xx test) that
 * landed meanwhile wins: rows verified after `observedAt` are left alone.
 */
export async function recordEndpointHealth(db: Queryable, id: string, h: EndpointHealthRecord, observedAt: Date): Promise<void> {
  await db.query(
    `UPDATE endpoints SET health_status = $2, failure_streak = $3, last_success_at = greatest($4, last_success_at),
       last_failure_at = coalesce($5, last_failure_at), last_response_code = $6, next_attempt_at = ${NEXT_ATTEMPT_IF_SENDING('$7')}, paused_at = $8,
       updated_at = now()
     WHERE id = $1 AND deleted_at IS NULL AND health_status <> 'unverified' AND (verified_at IS NULL OR verified_at <= $9)`,
    [id, h.health, h.failureStreak, h.lastSuccessAt, h.lastFailureAt, h.lastResponseCode, h.nextAttemptAt, h.pausedAt, observedAt],
  );
}

/**
 * A session that ended with every POST a success, on an endpoint healthy with no streak, records
 * what the workflow's `recordEndpointHealth` would (its health is unchanged): the latest success,
 * its code and the next attempt, under the same guards (`healthySessionGuard`). It changes no row
 * when the endpoint is no longer in that state (or was verified after `observedAt`): the workflow
 * then records it as before. The UPDATE, its values given as SQL expressions: `reportSession`
 * (src/db/deliveries.ts) runs it; a direct session's end (`endDirectSession`) sets the same
 * columns under the same guard (`healthySessionSets` with `when`).
 */
export function healthySessionUpdate(v: HealthySessionValues & { id: string }): string {
  return `UPDATE endpoints SET ${healthySessionSets(v)}
     WHERE id = ${v.id} AND ${healthySessionGuard(v.observedAt)}`;
}

export interface HealthySessionValues {
  lastSuccessAt: string;
  lastResponseCode: string;
  nextAttemptAt: string;
  observedAt: string;
}

/** The endpoint row (`alias.`, or unqualified) is one whose health a session of successes records itself. */
export function healthySessionGuard(observedAt: string, alias?: string): string {
  const c = alias ? `${alias}.` : '';
  return `${c}deleted_at IS NULL AND ${c}health_status = 'healthy' AND ${c}failure_streak = 0 AND ${c}paused_at IS NULL
       AND (${c}verified_at IS NULL OR ${c}verified_at <= ${observedAt})`;
}

/** The SET list of that record; with `when`, each column keeps its value unless `when` holds. */
export function healthySessionSets(v: HealthySessionValues, when?: string): string {
  const set = (column: string, value: string) => `${column} = ${when ? `CASE WHEN ${when} THEN ${value} ELSE ${column} END` : value}`;
  return [
    set('last_success_at', v.lastSuccessAt),
    set('last_response_code', v.lastResponseCode),
    set('next_attempt_at', NEXT_ATTEMPT_IF_SENDING(v.nextAttemptAt)),
    set('updated_at', 'now()'),
  ].join(', ');
}

export interface SuccessShown {
  id: string;
  at: Date;
  responseCode: number | null;
}

/**
 * Long delivery sessions show their progress: the latest success and its code, while the endpoint
 * is healthy (a failure, a PATCH or a test send goes through the workflow's record instead). Any
 * number of endpoints in one statement; an endpoint given twice takes its latest. (Two workers'
 * statements locking the same rows in another order could deadlock; one fails, and is only a
 * display missed: the next comes a second later.)
 */
export async function recordEndpointSuccesses(db: Queryable, shown: readonly SuccessShown[]): Promise<void> {
  const latest = new Map<string, SuccessShown>();
  for (const s of shown) {
    const had = latest.get(s.id);
    if (!had || had.at < s.at) latest.set(s.id, s);
  }
  if (latest.size === 0) return;
  const rows = [...latest.values()];
  await db.query({
    name: 'record_endpoint_successes',
    text: `UPDATE endpoints e SET last_success_at = s.at, last_response_code = s.code, updated_at = now()
     FROM unnest($1::uuid[], $2::timestamptz[], $3::int[]) AS s(id, at, code)
     WHERE e.id = s.id AND e.deleted_at IS NULL AND e.health_status = 'healthy' AND e.failure_streak = 0
       AND (e.last_success_at IS NULL OR e.last_success_at < s.at)`,
    values: [rows.map((r) => r.id), rows.map((r) => r.at), rows.map((r) => r.responseCode)],
  });
}
