/**
 * The I/O the endpoint workflow asks for. Activities return small records, never event
 * payloads or secrets, so workflow histories stay small and secret-free. Every activity
 * takes the workflow's clock (`nowMs`): the workflow is the scheduler, and its time is the
 * one that decides what is due.
 */
import { Context } from '@temporalio/activity';
import { HOLD_MS } from '../core/health.js';
import { HEARTBEAT_EVERY_MS, LEASE_MS, SESSION_MS } from '../core/runtime-limits.js';
import {
  claimWithEndpointsFor,
  exhaustOpenDeliveries,
  expireHeldDeliveries,
  holdOpenDeliveries,
  nextDueAtFor,
  releaseHeldDeliveries,
  releaseLeases,
  type ClaimRequest,
} from '../db/deliveries.js';
import { getAccount } from '../db/directory.js';
import { getEndpointById, getEndpointsByIds, recordEndpointHealth, recordNextAttempt } from '../db/endpoints.js';
import { enqueueNotification } from '../db/plan-usage.js';
import type { Db } from '../db/pool.js';
import type { EndpointRow } from '../db/endpoints.js';
import type { HttpClient } from './http-client.js';
import { createStatementBatcher } from '../runtime/statement-batcher.js';
import type { SecretBox } from '../security/secret-box.js';
import type { DeliveryRound, EndpointActivities, HealthRecord } from '../workflows/endpoint-contract.js';
import { runDeliverySession, type SessionDeps } from './delivery-session.js';
import { createAttemptRecorder } from './attempt-recorder.js';
import { endpointSnapshot } from './endpoint-snapshot.js';
import { untilLeaseGivenBack, type SessionLeases } from './session-leases.js';
import { createSessionRegistry, type SessionRegistry } from './session-registry.js';
import { endHandover } from '../db/session-leases.js';
import { showSuccesses } from './success-display.js';

export interface ActivityDeps {
  db: Db;
  secretBox: SecretBox;
  httpClient: HttpClient;
  /** The sessions of this worker, which its listener for due work pokes; a private one when absent. */
  sessions?: SessionRegistry;
  /** POSTs in flight at once for one endpoint while it is healthy. */
  concurrency?: number;
  /** How long a session waits for more work once nothing is due before it ends (0: it ends at once). */
  lingerMs?: number;
  /** How long a session runs at most, so its workflow looks at its endpoint now and then (SESSION_MS; tests shorten it). */
  maxSessionMs?: number;
  /** The endpoints' session leases, when this worker runs direct sessions beside its workflows' (src/delivery/direct-sessions.ts). */
  leases?: SessionLeases;
  /** This worker runs direct sessions (`SessionDeps.directSessions`). */
  directSessions?: boolean;
}

const ms = (d: Date | null) => (d ? d.getTime() : null);

/** What the worker's sessions share: its registry, its recorder, the pace of each throttled endpoint. */
export function sessionDepsOf(deps: ActivityDeps): SessionDeps {
  const maxSessionMs = deps.maxSessionMs ?? SESSION_MS;
  // The workflow's start-to-close for deliverDue leaves room for SESSION_MS of dispatching only.
  if (maxSessionMs > SESSION_MS) throw new Error(`maxSessionMs must be at most ${SESSION_MS} ms (src/core/runtime-limits.ts)`);
  return {
    db: deps.db,
    secretBox: deps.secretBox,
    httpClient: deps.httpClient,
    sessions: deps.sessions ?? createSessionRegistry(),
    recorder: createAttemptRecorder(deps.db),
    concurrency: deps.concurrency ?? 16,
    lingerMs: deps.lingerMs ?? 0,
    maxSessionMs,
    pacing: new Map<string, number>(),
    // Many endpoints' sessions each read their endpoint and claim on every poke: together, one statement for many.
    readEndpoint: createStatementBatcher(async (ids: string[]) => {
      const rows = new Map<string, EndpointRow>((await getEndpointsByIds(deps.db, ids)).map((r) => [r.id, r]));
      return ids.map((id) => rows.get(id));
    }),
    claim: createStatementBatcher((reqs: ClaimRequest[]) => claimWithEndpointsFor(deps.db, reqs, LEASE_MS)),
    nextDue: createStatementBatcher((ids: string[]) => nextDueAtFor(deps.db, ids)),
    leases: deps.leases,
    directSessions: deps.directSessions,
    // Each session shows its latest success once a second: with 100 sessions, 100 commits a second alone.
    showSuccess: showSuccesses(deps.db),
  };
}

/**
 * Runs a delivery session (`runDeliverySession`): up to `limit` POSTs of due deliveries, earliest
 * first, `concurrency` at a time, until the first failure, the endpoint stops sending, or nothing
 * more is due. Each attempt is recorded; what came of them is reported compacted.
 *
 * It heartbeats, so a session lost with its worker is retried within the heartbeat timeout;
 * the retry first releases the leases of the lost attempt (same activity, same owner), whose
 * POSTs in flight or not yet recorded are the only ones sent twice. An attempt whose heartbeats
 * were late, its worker alive, runs on until its next heartbeat tells it it was cancelled, and
 * renews its endpoint's lease meanwhile: the retry waits for that lease (`untilLeaseGivenBack`),
 * so the two do not send the same deliveries side by side.
 */
async function deliverDue(sessionDeps: SessionDeps, endpointId: string, nowMs: number, limit: number): Promise<DeliveryRound> {
  const { info, cancellationSignal } = Context.current();
  const owner = `${info.workflowExecution?.runId}/${info.activityId}`;
  // A retry runs later than the workflow asked; the server's clock says how much later.
  const startMs = nowMs + Math.max(0, info.currentAttemptScheduledTimestampMs - info.scheduledTimestampMs);
  const startedRealMs = Date.now();
  const heartbeat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_EVERY_MS);
  try {
    if (info.attempt > 1) {
      await untilLeaseGivenBack(sessionDeps.db, endpointId, owner, cancellationSignal);
      await releaseLeases(sessionDeps.db, owner);
    }
    return await runDeliverySession(sessionDeps, {
      endpointId,
      owner,
      // Never behind the real clock: the workflow's time is that of its last task, and rows stored since
      // (due at their insertion) would otherwise wait out the activity's dispatch delay.
      clock: () => Math.max(startMs + (Date.now() - startedRealMs), Date.now()),
      observedAtMs: nowMs,
      limit,
      signal: cancellationSignal,
    });
  } finally {
    clearInterval(heartbeat);
  }
}

/** `sessionDeps`: what the worker's direct sessions share with these (src/delivery/direct-sessions.ts); its own when absent. */
export function createActivities(deps: ActivityDeps, sessionDeps = sessionDepsOf(deps)): EndpointActivities {
  const { db } = deps;

  return {
    async loadEndpointSnapshot(endpointId) {
      const row = await getEndpointById(db, endpointId);
      return !row || row.deleted_at ? null : endpointSnapshot(row);
    },

    /** After deletion: what was never delivered ends `exhausted` / `endpoint_deleted`, and stays in the audit list. */
    async closeEndpoint(endpointId: string): Promise<number> {
      return exhaustOpenDeliveries(db, endpointId, 'endpoint_deleted');
    },

    /** A delivery session, heartbeating (`deliverDue` above). */
    deliverDue: (endpointId: string, nowMs: number, limit: number): Promise<DeliveryRound> =>
      deliverDue(sessionDeps, endpointId, nowMs, limit),

    async recordHealth(endpointId: string, h: HealthRecord): Promise<void> {
      const d = (v: number | null) => (v === null ? null : new Date(v));
      await recordEndpointHealth(
        db,
        endpointId,
        {
          health: h.health,
          failureStreak: h.failureStreak,
          lastSuccessAt: d(h.lastSuccessAtMs),
          lastFailureAt: d(h.lastFailureAtMs),
          lastResponseCode: h.lastResponseCode,
          nextAttemptAt: d(h.nextAttemptAtMs),
          pausedAt: d(h.pausedAtMs),
        },
        new Date(h.observedAtMs),
      );
      // Every round that left a hand-over (src/db/session-leases.ts) comes here: it is taken in, sessions may start again.
      if (deps.leases) await endHandover(db, endpointId);
    },

    async recordNextAttempt(endpointId: string, nextAttemptAtMs: number | null): Promise<void> {
      await recordNextAttempt(db, endpointId, nextAttemptAtMs === null ? null : new Date(nextAttemptAtMs));
    },

    async holdDeliveries(endpointId: string, nowMs: number): Promise<number> {
      return holdOpenDeliveries(db, endpointId, new Date(nowMs));
    },

    async releaseDeliveries(endpointId: string, nowMs: number): Promise<number> {
      return releaseHeldDeliveries(db, endpointId, new Date(nowMs));
    },

    /**
     * Ends holds older than 14 days; returns when the next hold expires and how many are held.
     * (Recorded histories hold the older answer, the bare expiry time: the workflow reads both.)
     */
    async expireHeld(endpointId: string, nowMs: number) {
      const r = await expireHeldDeliveries(db, endpointId, new Date(nowMs), HOLD_MS);
      return { nextExpiryAtMs: ms(r.nextExpiryAt), held: r.held };
    },

    /** Queues an alert to the Account owner; the key makes it once per streak and threshold. */
    async alertOwner(endpointId: string, streak: number, streakStartedAtMs: number): Promise<void> {
      const endpoint = await getEndpointById(db, endpointId);
      if (!endpoint) return;
      const account = await getAccount(db, endpoint.account_id);
      if (!account) return;
      await enqueueNotification(db, {
        accountId: account.id,
        kind: streak >= 15 ? 'endpoint_paused' : 'endpoint_failing',
        dedupeKey: `endpoint_alert:${endpointId}:${streakStartedAtMs}:${streak}`,
        payload: { to: account.owner_email, endpoint_id: endpointId, url: endpoint.url, failure_streak: streak },
      });
    },
  };
}
