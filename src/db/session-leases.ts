import type { AccountId, EndpointId } from '../core/ids.js';
/**
 * The endpoint row's session lease: at most one delivery session per endpoint across all workers
 * (src/delivery/session-leases.ts says who takes it and when). Times are the database's, so workers'
 * clocks need not agree.
 */
import { NEXT_DUE_SQL, OWED, OWED_COUNT_SQL, type SessionReport } from './deliveries.js';
import { endpointColumnsAs, endpointFromColumns, healthySessionGuard, healthySessionSets, type EndpointRow } from './endpoints.js';
import type { Queryable } from './pool.js';
import { ONE_ROW_ESTIMATE } from './row-estimates.js';

/** Who may start a session: a direct one only on a healthy endpoint with no streak, the workflow's on any. */
export type SessionKind = 'direct' | 'workflow';

export type LeaseAnswer =
  /**
   * Taken (or already this owner's): the endpoint as committed now, and how long ago the last POST
   * of its sessions started (null: none recorded), so this session keeps their pace (`rate_limit`).
   */
  | { granted: true; endpoint: EndpointRow; lastPostAgoMs: number | null }
  /**
   * Another session holds it for `heldMs` more (a live one renews it, and looks for due work when it
   * gives it back); 0: it was given back while this was asked, so ask again.
   */
  | { granted: false; heldMs: number }
  /** Not for this kind of session now: an endpoint the workflow must look at, or a round handed over and not yet taken in. */
  | { granted: false; heldMs: null };

/*
 * Endpoint rows are locked here FOR NO KEY UPDATE, the lock an UPDATE of them takes anyway (no key
 * column changes), never FOR UPDATE: that one also waits for the FOR KEY SHARE locks a publish's
 * foreign-key checks hold on the endpoints of the deliveries it inserts, in its own order, and a
 * batch of takes locking in id order then deadlocked with a publish (a CI run's 500), while a
 * renewal or a look for lost sessions skipped rows a publish was inserting deliveries for.
 */
const secs = (p: string) => `make_interval(secs => ${p}::double precision / 1000)`;
/**
 * A session of `owner` may start: no other's live lease, no handed-over round waiting for its
 * workflow (unless older than `handoverTimeout`: abandoned).
 */
const freeFor = (
  owner: string,
  handoverTimeout: string,
) => `(e.session_owner IS NULL OR e.session_until < now() OR e.session_owner = ${owner})
  AND (e.handover_at IS NULL OR e.handover_at < now() - ${secs(handoverTimeout)})`;
const FREE = freeFor('$2', '$4');
/** What lets a session start without its workflow: the endpoint sends, healthy, no streak, not paused. */
const DIRECT_ELIGIBLE = `e.deleted_at IS NULL AND e.active AND e.health_status = 'healthy' AND e.failure_streak = 0 AND e.paused_at IS NULL`;
/** DIRECT_ELIGIBLE of an endpoint read already. */
export const directEligible = (e: EndpointRow): boolean =>
  e.deleted_at === null && e.active && e.health_status === 'healthy' && e.failure_streak === 0 && e.paused_at === null;
/**
 * Why a lease was not taken, as `held_ms`: how long another session holds it, or null when this
 * kind of session may not start at all (not `eligible`, a hand-over waiting): the workflow must look.
 * 0 when nobody holds it now: the take's snapshot saw a session that has ended since (a session
 * ending as news for it comes, all the more at a round's start), and asking again takes it.
 */
const heldMsFor = (eligible: string, owner: string, handoverTimeout: string) =>
  `CASE WHEN ${eligible} AND (e.handover_at IS NULL OR e.handover_at < now() - ${secs(handoverTimeout)})
   THEN CASE WHEN e.session_owner IS NOT NULL AND e.session_owner <> ${owner} AND e.session_until >= now()
     THEN extract(epoch FROM e.session_until - now()) * 1000 ELSE 0 END
   END::float8 AS held_ms`;
/** How long ago the last POST of the endpoint's sessions started, for the next session's pace. */
const LAST_POST_AGO_MS = `(extract(epoch FROM now() - e.session_paced_at) * 1000)::float8 AS last_post_ago_ms`;

/**
 * Takes the endpoint's session lease for `owner` (for `leaseMs`), reading the endpoint in the
 * same statement: the read a session makes at its open anyway. An abandoned hand-over (older than
 * `handoverTimeoutMs`: its workflow never took it in) no longer blocks.
 */
export async function takeSessionLease(
  db: Queryable,
  endpointId: string,
  owner: string,
  kind: SessionKind,
  leaseMs: number,
  handoverTimeoutMs: number,
): Promise<LeaseAnswer> {
  const { rows } = await db.query({
    name: `take_session_lease_${kind}`,
    text: `UPDATE endpoints e SET session_owner = $2, session_until = now() + ${secs('$3')}, handover_at = NULL
     WHERE e.id = $1 AND ${FREE} ${kind === 'direct' ? `AND ${DIRECT_ELIGIBLE}` : ''}
     RETURNING ${endpointColumnsAs('e', '')}, ${LAST_POST_AGO_MS}`,
    values: [endpointId, owner, leaseMs, handoverTimeoutMs],
  });
  const endpoint = rows[0] ? endpointFromColumns(rows[0], '') : undefined;
  if (endpoint) return { granted: true, endpoint, lastPostAgoMs: (rows[0] as { last_post_ago_ms: number | null }).last_post_ago_ms };
  // Not taken: why, so the caller knows whether to wait for the holder or go to the workflow.
  const why = await db.query<{ held_ms: number | null }>(
    `SELECT ${heldMsFor(kind === 'direct' ? DIRECT_ELIGIBLE : 'true', '$2', '$3')} FROM endpoints e WHERE e.id = $1`,
    [endpointId, owner, handoverTimeoutMs],
  );
  return { granted: false, heldMs: why.rows[0]?.held_ms ?? null };
}

/** A direct session's request for its endpoint's lease (`takeDirectSessionLeases`). */
export interface LeaseRequest {
  endpointId: string;
  owner: string;
}

/**
 * `takeSessionLease` for many direct sessions in two statements at most, the answers in the
 * requests' order: a hundred endpoints woken together took two hundred statements from the two
 * workers racing for them. The rows are locked in id order, so two workers' batches over the same
 * endpoints wait for each other and never deadlock; an endpoint asked twice in one batch goes to
 * one of its owners. Those refused are asked why in a second statement, which sees the lease of a
 * worker that won the race (the first statement's snapshot may predate it).
 */
export async function takeDirectSessionLeases(
  db: Queryable,
  reqs: readonly LeaseRequest[],
  leaseMs: number,
  handoverTimeoutMs: number,
): Promise<LeaseAnswer[]> {
  const ids = reqs.map((r) => r.endpointId);
  const owners = reqs.map((r) => r.owner);
  const { rows } = await db.query({
    name: 'take_direct_session_leases',
    text: `WITH req AS (
       SELECT DISTINCT ON (r.id) r.id, r.owner FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS r(id, owner, n)
       WHERE ${ONE_ROW_ESTIMATE}
       ORDER BY r.id, r.owner
     ), free AS (
       SELECT e.id, req.owner FROM endpoints e JOIN req ON req.id = e.id
       WHERE ${freeFor('req.owner', '$4')} AND ${DIRECT_ELIGIBLE}
       ORDER BY e.id FOR NO KEY UPDATE OF e
     )
     UPDATE endpoints e SET session_owner = f.owner, session_until = now() + ${secs('$3')}, handover_at = NULL
     FROM free f WHERE e.id = f.id
     RETURNING f.owner AS taken_by, ${endpointColumnsAs('e', '')}, ${LAST_POST_AGO_MS}`,
    values: [ids, owners, leaseMs, handoverTimeoutMs],
  });
  const taken = new Map<string, { endpoint: EndpointRow; lastPostAgoMs: number | null }>();
  for (const row of rows as ({ taken_by: string; last_post_ago_ms: number | null } & Record<string, unknown>)[])
    taken.set(row.taken_by, { endpoint: endpointFromColumns(row, '')!, lastPostAgoMs: row.last_post_ago_ms });
  const refused = reqs.filter((r) => !taken.has(r.owner));
  const heldMs = new Map<string, number | null>();
  if (refused.length > 0) {
    const why = await db.query<{ owner: string; held_ms: number | null }>({
      name: 'why_direct_session_leases_refused',
      text: `SELECT r.owner, ${heldMsFor(DIRECT_ELIGIBLE, 'r.owner', '$3')}
       FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS r(id, owner, n) LEFT JOIN endpoints e ON e.id = r.id
       WHERE ${ONE_ROW_ESTIMATE}`,
      values: [refused.map((r) => r.endpointId), refused.map((r) => r.owner), handoverTimeoutMs],
    });
    for (const w of why.rows) heldMs.set(w.owner, w.held_ms);
  }
  return reqs.map((r) => {
    const t = taken.get(r.owner);
    return t ? { granted: true, ...t } : { granted: false, heldMs: heldMs.get(r.owner) ?? null };
  });
}

/**
 * The SET list that gives the endpoint row `e`'s lease back: the hand-over mark when `handover`
 * (an SQL boolean) holds, and the last POST's time kept for the next session's pace from
 * `lastPostAgoMs` (an SQL number of milliseconds; null keeps what was stored).
 */
const leaseGivenBackSets = (handover: string, lastPostAgoMs: string) =>
  `session_owner = NULL, session_until = NULL, handover_at = CASE WHEN ${handover} THEN now() ELSE e.handover_at END,
       session_paced_at = coalesce(now() - ${secs(lastPostAgoMs)}, e.session_paced_at)`;

/** Whether the endpoint `$1` has work due now that no session holds (a lease's end tells the worker's router). */
const DUE_NOBODY_HOLDS = `EXISTS (
       SELECT 1 FROM deliveries d
       WHERE d.endpoint_id = $1 AND ${OWED} AND d.held_since IS NULL AND d.next_attempt_at <= now()
         AND (d.leased_until IS NULL OR d.leased_until < now())
     )`;

/**
 * Gives the lease back. `handover`: the session's round goes to the workflow, and no session
 * starts until it has taken it in (`endHandover`). `lastPostAgoMs`: how long ago the session's last
 * POST started (by its worker's clock; stored by the database's), for the next session's pace; null
 * keeps what was stored. Answers whether work is due now that nobody
 * holds (news that came while the session was ending found the lease taken) and the endpoint's
 * Account; null when the lease was no longer this owner's.
 */
export async function endSessionLease(
  db: Queryable,
  endpointId: string,
  owner: string,
  handover: boolean,
  lastPostAgoMs: number | null = null,
): Promise<{ due: boolean; accountId: AccountId } | null> {
  const { rows } = await db.query<{ due: boolean; account_id: AccountId }>({
    name: 'end_session_lease',
    text: `UPDATE endpoints e SET ${leaseGivenBackSets('$3', '$4')}
     WHERE e.id = $1 AND e.session_owner = $2
     RETURNING e.account_id, ${DUE_NOBODY_HOLDS} AS due`,
    values: [endpointId, owner, handover, lastPostAgoMs],
  });
  return rows[0] ? { due: rows[0].due, accountId: rows[0].account_id } : null;
}

/** What a direct session's end answers: its report, and its lease's end (null: the lease was no longer its own). */
export interface DirectSessionEnd {
  report: SessionReport;
  lease: { due: boolean; accountId: AccountId; handedOver: boolean } | null;
}

/**
 * A direct session's end in one statement: its report (`reportSession`: the next due time, what
 * it owes and, for a session of successes, its record of health) and its lease given back
 * (`endSessionLease`), handed over to the workflow when it had outcomes it did not record.
 * Both update the endpoint's row, and a sparse endpoint's every session made both: two statements
 * of about eight a delivery. Health is recorded only while the lease is still the session's: a
 * session that lost it hands its outcomes to the workflow. `healthy`: the latest success of a
 * session of successes only (none: it had a failure, or no outcome).
 */
export async function endDirectSession(
  db: Queryable,
  endpointId: string,
  owner: string,
  s: {
    healthy: { lastSuccessAt: Date; lastResponseCode: number | null } | null;
    hadOutcomes: boolean;
    observedAt: Date;
    lastPostAgoMs: number | null;
  },
): Promise<DirectSessionEnd> {
  const recorded = `($3::timestamptz IS NOT NULL AND ${healthySessionGuard('$7', 'e')})`;
  const { rows } = await db.query<{
    at: Date | null;
    owed: number;
    account_id: AccountId | null;
    recorded: boolean | null;
    due_now: boolean | null;
  }>({
    name: 'end_direct_session',
    text: `WITH due AS (${NEXT_DUE_SQL}), owed AS (${OWED_COUNT_SQL}), ended AS (
       UPDATE endpoints e SET ${leaseGivenBackSets(`$5 AND NOT ${recorded}`, '$6')},
         ${healthySessionSets({ lastSuccessAt: '$3', lastResponseCode: '$4', nextAttemptAt: '(SELECT at FROM due)', observedAt: '$7' }, recorded)}
       WHERE e.id = $1 AND e.session_owner = $2
       RETURNING e.account_id, ${recorded} AS recorded, ${DUE_NOBODY_HOLDS} AS due_now
     )
     SELECT (SELECT at FROM due) AS at, (SELECT n FROM owed) AS owed, ended.* FROM (SELECT) AS one LEFT JOIN ended ON true`,
    values: [
      endpointId,
      owner,
      s.healthy?.lastSuccessAt ?? null,
      s.healthy?.lastResponseCode ?? null,
      s.hadOutcomes,
      s.lastPostAgoMs,
      s.observedAt,
    ],
  });
  const r = rows[0]!;
  const healthRecorded = r.recorded === true;
  return {
    report: { nextDueAt: r.at, owed: r.owed, healthRecorded },
    lease:
      r.account_id === null ? null : { due: r.due_now === true, accountId: r.account_id, handedOver: s.hadOutcomes && !healthRecorded },
  };
}

export interface HeldLease {
  endpointId: string;
  owner: string;
}

/**
 * Renews, in one statement, the leases of a worker's live sessions for `leaseMs` more: the
 * endpoint's, and the deliveries in `claims` (a direct session's, claimed and not yet recorded, by
 * id: a backlog's size costs nothing). Answers the owners whose endpoint lease was renewed (`kept`),
 * and those whose endpoint lease is no longer theirs at all (`lost`: it lapsed and was taken back or
 * by another session); an owner in neither had its row locked meanwhile, and the next round renews it.
 */
export async function renewSessionLeases(
  db: Queryable,
  leases: readonly HeldLease[],
  claims: readonly { id: string; owner: string }[],
  leaseMs: number,
): Promise<{ kept: Set<string>; lost: Set<string> }> {
  if (leases.length === 0) return { kept: new Set(), lost: new Set() };
  const { rows } = await db.query<{ owner: string; kept: boolean }>({
    name: 'renew_session_leases',
    // Rows locked meanwhile are skipped, never waited for: a record or a release is ending that
    // delivery's lease anyway (waiting, in another order than the record's, deadlocked with it),
    // and an endpoint row is renewed by the next round, well within the lease.
    text: `WITH claims AS (
       UPDATE deliveries d SET leased_until = now() + ${secs('$5')}
       WHERE d.id IN (
         SELECT x.id FROM deliveries x JOIN unnest($3::uuid[], $4::text[]) AS c(id, owner) ON x.id = c.id AND x.lease_owner = c.owner
         WHERE x.leased_until IS NOT NULL FOR UPDATE OF x SKIP LOCKED
       )
     ), renewed AS (
       UPDATE endpoints e SET session_until = now() + ${secs('$5')}
       WHERE e.id IN (
         SELECT y.id FROM endpoints y JOIN unnest($1::uuid[], $2::text[]) AS l(endpoint_id, owner) ON y.id = l.endpoint_id AND y.session_owner = l.owner
         FOR NO KEY UPDATE OF y SKIP LOCKED
       )
       RETURNING e.session_owner AS owner
     )
     SELECT owner, true AS kept FROM renewed
     UNION ALL
     -- Another owner (or none) as of the statement's start: nothing this worker does gives it back.
     SELECT l.owner, false FROM unnest($1::uuid[], $2::text[]) AS l(endpoint_id, owner)
     LEFT JOIN endpoints z ON z.id = l.endpoint_id WHERE z.session_owner IS DISTINCT FROM l.owner`,
    values: [leases.map((l) => l.endpointId), leases.map((l) => l.owner), claims.map((c) => c.id), claims.map((c) => c.owner), leaseMs],
  });
  return { kept: new Set(rows.filter((r) => r.kept).map((r) => r.owner)), lost: new Set(rows.filter((r) => !r.kept).map((r) => r.owner)) };
}

/** How long `owner`'s lease on the endpoint still runs: 0 when it holds none (given back, lapsed, or another's). */
export async function sessionLeaseLeftMs(db: Queryable, endpointId: string, owner: string): Promise<number> {
  const { rows } = await db.query<{ left_ms: number }>(
    `SELECT greatest(0, extract(epoch FROM session_until - now()) * 1000)::float8 AS left_ms FROM endpoints WHERE id = $1 AND session_owner = $2`,
    [endpointId, owner],
  );
  return rows[0]?.left_ms ?? 0;
}

/** The workflow has applied a handed-over round (recordHealth): sessions may start again. */
export async function endHandover(db: Queryable, endpointId: string): Promise<void> {
  await db.query(`UPDATE endpoints SET handover_at = NULL WHERE id = $1 AND handover_at IS NOT NULL`, [endpointId]);
}

/**
 * Endpoints whose session lease ran out unreleased (their session was lost with its worker),
 * their lease cleared so each is found once. A lost activity session's retry takes the lease again
 * (same owner, or none).
 */
export async function takeBackLostSessions(db: Queryable, limit = 1000): Promise<{ endpointId: EndpointId; accountId: AccountId }[]> {
  const { rows } = await db.query<{ id: EndpointId; account_id: AccountId }>(
    `UPDATE endpoints SET session_owner = NULL, session_until = NULL
     WHERE id IN (SELECT id FROM endpoints WHERE session_owner IS NOT NULL AND session_until < now() LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED)
       AND session_owner IS NOT NULL AND session_until < now()
     RETURNING id, account_id`,
    [limit],
  );
  return rows.map((r) => ({ endpointId: r.id, accountId: r.account_id }));
}
