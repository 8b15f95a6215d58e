/**
 * A worker's side of the endpoints' session leases (src/db/session-leases.ts): at most one delivery
 * session per endpoint across all workers, direct or the workflow's own. Why a lease on the
 * endpoint row: the session reads that row at its open anyway, so taking the lease in the same
 * statement costs nothing more; a row lock serialises two workers racing for it; and a lease with a
 * time (renewed by one statement per worker every HEARTBEAT_EVERY_MS for all its sessions) frees
 * itself when its worker dies, where an advisory lock would need a connection held per session.
 *
 * A session that gives its lease back learns whether work is due that nobody holds (news that
 * arrived while it was ending found the lease taken): `onFreed` listeners (the due router) route it.
 *
 * A session POSTs only while its lease is surely its own (`HeldSession.current`): renewed within
 * CURRENT_SHARE of its length and not found taken. A worker whose renewals stall (a busy machine,
 * Postgres away) would otherwise go on sending deliveries that another worker's session, having
 * taken the lapsed lease, claims and sends too.
 */
import type { AccountId, EndpointId } from '../core/ids.js';
import { HANDOVER_TIMEOUT_MS, HEARTBEAT_EVERY_MS, SESSION_LEASE_MS } from '../core/runtime-limits.js';
import type { DueEndpoint } from '../db/due-notifications.js';
import type { Db } from '../db/pool.js';
import {
  endDirectSession,
  endSessionLease,
  renewSessionLeases,
  sessionLeaseLeftMs,
  takeDirectSessionLeases,
  takeSessionLease,
  type HeldLease,
  type LeaseRequest,
  type LeaseAnswer,
  type SessionKind,
  type DirectSessionEnd,
} from '../db/session-leases.js';
import { logger } from '../runtime/logger.js';
import { createStatementBatcher } from '../runtime/statement-batcher.js';
import { merged } from '../core/merged.js';

export interface SessionLeases {
  readonly leaseMs: number;
  /** Takes the endpoint's lease; one given back while it was asked (answered `heldMs` 0) is asked for again once. */
  take(endpointId: string, owner: string, kind: SessionKind): Promise<LeaseAnswer>;
  /**
   * Renews the lease while the session lives, and with `shortClaims` (a direct session's) the
   * deliveries it has claimed and not yet taken to the end, which it adds to and deletes from
   * `claims`; `release` when it ends.
   */
  hold(lease: HeldLease, shortClaims: boolean): HeldSession;
  /**
   * Gives the lease back; `handover`: the session's round goes to its workflow (no session starts
   * until it is taken in). With `tellIfDue`, work due meanwhile goes to the `onFreed` listeners.
   * `lastPostAgoMs`: how long ago the session's last POST started, kept with the lease for the next
   * session's pace, wherever it runs (none: what was kept stays).
   */
  end(endpointId: string, owner: string, o: { handover: boolean; tellIfDue: boolean; lastPostAgoMs?: number | null }): Promise<void>;
  /**
   * A direct session's end: its report and its lease given back in one statement (`endDirectSession`),
   * handed over when it had outcomes it did not record; otherwise work due meanwhile goes to the
   * `onFreed` listeners.
   */
  endDirect(endpointId: string, owner: string, s: Parameters<typeof endDirectSession>[3]): Promise<DirectSessionEnd['report']>;
  onFreed(listener: (due: DueEndpoint) => void): void;
  /** Whether a session of this worker holds the endpoint's lease, from its take until its end has returned. */
  heldHere(endpointId: string): boolean;
  /** heldHere, or its end returned within the last `ms`. */
  heldHereWithin(endpointId: string, ms: number): boolean;
}

export interface HeldSession {
  /** Ids of the deliveries the session holds under a short lease (none: the session's claims are leased for LEASE_MS). */
  claims: Set<string> | undefined;
  /** The lease is surely still this session's: renewed (or taken) within CURRENT_SHARE of its length, and not found another's. */
  current(): boolean;
  release(): void;
}

/**
 * How much of a lease's length may pass since its last renewal was asked before its session stops
 * POSTing. The database sets the lease's end after the ask, so the lease holds at least that long;
 * with a renewal every fifth of it, three may be skipped (rows locked) before a session stops.
 */
const CURRENT_SHARE = 0.8;

/** A lease held by a live session here: one entry per session, so two with the same owner (an activity's retry) are each renewed. */
interface HeldEntry extends HeldLease {
  claims: Set<string> | undefined;
  /** performance.now() when its lease's last renewal (or its hold) was asked. */
  confirmedAt: number;
  lost: boolean;
}

/** Ends given back here are remembered this long (heldHereWithin asks about shorter spans). */
const ENDED_KEPT_MS = 10_000;

/** One session fewer holding the endpoint's lease here; the last one's end is noted in `ended`. */
function countDown(here: Map<string, number>, ended: Map<string, number>, endpointId: string): void {
  const n = (here.get(endpointId) ?? 1) - 1;
  if (n > 0) return void here.set(endpointId, n);
  here.delete(endpointId);
  const now = performance.now();
  // Oldest first (re-set keys move to the end): drop what is past keeping.
  ended.delete(endpointId);
  for (const [id, at] of ended) {
    if (now - at < ENDED_KEPT_MS) break;
    ended.delete(id);
  }
  ended.set(endpointId, now);
}

function tellFreed(listeners: ((due: DueEndpoint) => void)[], endpointId: string, accountId: AccountId): void {
  for (const listener of listeners) listener({ endpointId: endpointId as EndpointId, accountId });
}

export function createSessionLeases(db: Db, o: { leaseMs?: number; renewEveryMs?: number } = {}): SessionLeases {
  const leaseMs = o.leaseMs ?? SESSION_LEASE_MS;
  const renewEveryMs = o.renewEveryMs ?? Math.min(HEARTBEAT_EVERY_MS, leaseMs / 5);
  const held = new Set<HeldEntry>();
  const freedListeners: ((due: DueEndpoint) => void)[] = [];
  /** Sessions here per endpoint with the lease taken and not yet given back (an activity's retry may overlap its lost attempt). */
  const here = new Map<string, number>();
  /** When the last session here of each endpoint gave its lease back (performance.now()), for ENDED_KEPT_MS. */
  const ended = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let renewing = false;
  // News for many endpoints at once (a burst after a quiet spell) takes their leases in shared statements.
  const takeDirect = createStatementBatcher((reqs: LeaseRequest[]) => takeDirectSessionLeases(db, reqs, leaseMs, HANDOVER_TIMEOUT_MS));

  async function renew() {
    if (renewing || held.size === 0) return;
    renewing = true;
    const leases = [...held];
    const claims = leases.flatMap((l) => [...(l.claims ?? [])].map((id) => ({ id, owner: l.owner })));
    const askedAt = performance.now();
    try {
      const { kept, lost } = await renewSessionLeases(db, leases, claims, leaseMs);
      for (const l of leases) {
        if (!held.has(l)) continue;
        if (kept.has(l.owner)) l.confirmedAt = askedAt;
        else if (lost.has(l.owner) && !l.lost) {
          l.lost = true;
          logger.warn({ endpointId: l.endpointId, owner: l.owner }, 'session lease lapsed and was taken back; the session sends no more');
        } else logger.debug({ endpointId: l.endpointId, owner: l.owner }, 'session lease not renewed (row busy); the next round renews it');
      }
    } catch (err) {
      logger.warn({ err }, 'session leases not renewed; the next renewal tries again');
    } finally {
      renewing = false;
    }
  }

  return {
    leaseMs,
    async take(endpointId, owner, kind) {
      const ask = () =>
        kind === 'direct' ? takeDirect({ endpointId, owner }) : takeSessionLease(db, endpointId, owner, kind, leaseMs, HANDOVER_TIMEOUT_MS);
      let answer = await ask();
      // Given back as it was asked (the take's snapshot saw a session that has ended since): asked
      // again at once, so news arriving as a session ends starts the next, not a wake of the workflow.
      if (!answer.granted && answer.heldMs === 0) answer = await ask();
      if (answer.granted) here.set(endpointId, (here.get(endpointId) ?? 0) + 1);
      return answer;
    },
    hold(lease, shortClaims) {
      const entry: HeldEntry = merged(lease, {
        claims: shortClaims ? new Set<string>() : undefined,
        confirmedAt: performance.now(),
        lost: false,
      });
      held.add(entry);
      timer ??= setInterval(() => void renew(), renewEveryMs).unref();
      return {
        claims: entry.claims,
        current: () => !entry.lost && performance.now() - entry.confirmedAt < leaseMs * CURRENT_SHARE,
        release() {
          held.delete(entry);
          if (held.size === 0) {
            clearInterval(timer);
            timer = undefined;
          }
        },
      };
    },
    async end(endpointId, owner, { handover, tellIfDue, lastPostAgoMs }) {
      const left = await endSessionLease(db, endpointId, owner, handover, lastPostAgoMs ?? null).finally(() =>
        countDown(here, ended, endpointId),
      );
      if (left?.due && tellIfDue) tellFreed(freedListeners, endpointId, left.accountId);
    },
    async endDirect(endpointId, owner, session) {
      const { report, lease } = await endDirectSession(db, endpointId, owner, session).finally(() => countDown(here, ended, endpointId));
      if (lease?.due && !lease.handedOver) tellFreed(freedListeners, endpointId, lease.accountId);
      return report;
    },
    onFreed(listener) {
      freedListeners.push(listener);
    },
    heldHere: (endpointId) => here.has(endpointId),
    heldHereWithin: (endpointId, ms) => here.has(endpointId) || performance.now() - (ended.get(endpointId) ?? -Infinity) < ms,
  };
}

/**
 * Waits while an earlier attempt of the activity (same owner) holds the endpoint's lease, at most
 * `maxWaitMs`: time for a live one to learn of its cancellation and stop starting POSTs (a
 * dead one's lease lapses within it). Its POSTs still in flight after that may be sent twice.
 */
export async function untilLeaseGivenBack(
  db: Db,
  endpointId: string,
  owner: string,
  cancelled: AbortSignal,
  maxWaitMs = SESSION_LEASE_MS,
): Promise<void> {
  const until = Date.now() + maxWaitMs;
  for (let left = await sessionLeaseLeftMs(db, endpointId, owner); left > 0 && Date.now() < until && !cancelled.aborted;) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(left, 250)));
    left = await sessionLeaseLeftMs(db, endpointId, owner);
  }
}
