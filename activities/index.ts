/**
 * The I/O the endpoint workflow asks for. Activities return small records, never event
 * payloads or secrets, so workflow histories stay small and secret-free. Every activity
 * takes the workflow's clock (`nowMs`): the workflow is the scheduler, and its time is the
 * one that decides what is due.
 */
import { Context } from '@temporalio/activity';
import { getEventDefinition } from '../core/catalog/index.js';
import { HOLD_MS, sends, type AttemptOutcome } from '../core/health.js';
import { retryDelayMs } from '../core/retry-curve.js';
import { webhookBody } from '../core/webhook-body.js';
import {
  claimDueDeliveries,
  closeForDeletedEvent,
  exhaustOpenDeliveries,
  expireHeldDeliveries,
  holdOpenDeliveries,
  nextDueAt,
  recordDeliveryAttempt,
  releaseHeldDeliveries,
  releaseLeases,
  type ClaimedDelivery,
} from '../db/deliveries.js';
import { getAccount } from '../db/directory.js';
import { getEndpointById, recordEndpointHealth, recordNextAttempt, type EndpointRow, type HealthStatus } from '../db/endpoints.js';
import { getEventsByIds, type EventRow } from '../db/events.js';
import { enqueueNotification } from '../db/plan-usage.js';
import type { Db } from '../db/pool.js';
import type { HttpClient } from '../delivery/http-client.js';
import { sendToEndpoint } from '../delivery/send-webhook.js';
import { logger } from '../runtime/logger.js';
import { webhookSends } from '../runtime/metrics.js';
import type { SecretBox } from '../security/secret-box.js';

export interface EndpointSnapshot {
  health_status: HealthStatus;
  failure_streak: number;
  active: boolean;
}

export interface ActivityDeps {
  db: Db;
  secretBox: SecretBox;
  httpClient: HttpClient;
  /** POSTs in flight at once for one endpoint while it is healthy. */
  concurrency?: number;
}

export interface DeliveryRound {
  /** The POSTs made, each with its own outcome. */
  outcomes: AttemptOutcome[];
  /** The batch was full and the round ran to its end: more may be due now. */
  more: boolean;
  nextDueAtMs: number | null;
}

/**
 * How long a claimed delivery is kept from other rounds. A lost round's retry releases its
 * leases at once (by owner), so this only bounds a round that is never retried.
 */
const LEASE_MS = 4 * 60_000;
const HEARTBEAT_EVERY_MS = 2_000;
const ms = (d: Date | null) => (d ? d.getTime() : null);

/** Runs `fn` over `items`, at most `limit` at a time, in order; a lane takes no new item once `stop()` says so. */
async function eachLimit<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>, stop: () => boolean): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (!stop() && next < items.length) {
        const index = next++;
        await fn(items[index]!, index);
      }
    }),
  );
}

/**
 * The endpoint as committed now, read before each POST so a PATCH (secret, url,
 * Authorization, deactivation) applies to every attempt that starts after it. POSTs that
 * start while a read is in flight share it: one primary-key read per round trip, not per POST.
 */
function currentEndpoint(db: Db, endpointId: string): () => Promise<EndpointRow | undefined> {
  let reading: Promise<EndpointRow | undefined> | null = null;
  return () =>
    (reading ??= getEndpointById(db, endpointId).finally(() => {
      reading = null;
    }));
}

export function createActivities(deps: ActivityDeps) {
  const { db } = deps;

  /**
   * POSTs one claimed delivery to the endpoint as it is now and records the attempt. Returns
   * null when nothing was sent (the event is gone). A failed record is logged, not thrown: the
   * other POSTs of the round go on, and the delivery's lease brings it back.
   */
  async function attempt(
    endpoint: EndpointRow,
    d: ClaimedDelivery,
    event: EventRow | undefined,
    clock: () => number,
  ): Promise<AttemptOutcome | null> {
    const def = getEventDefinition(d.event_type);
    if (!event || !def) {
      await closeForDeletedEvent(db, d.id);
      return null;
    }
    const body = Buffer.from(JSON.stringify(webhookBody(def, event)), 'utf8');
    const startedAtMs = clock();
    const outcome = await sendToEndpoint(deps.httpClient, deps.secretBox, endpoint, {
      eventType: d.event_type,
      idempotencyKey: d.idempotency_key,
      body,
    });
    webhookSends.inc({ kind: 'delivery', outcome: outcome.acknowledged ? 'success' : (outcome.error ?? 'failure') });
    const number = d.attempts + 1;
    await recordDeliveryAttempt(db, {
      id: d.id,
      number,
      attempt: {
        startedAt: new Date(startedAtMs),
        durationMs: outcome.durationMs,
        responseCode: outcome.recordedStatus,
        error: outcome.error,
        responseExcerpt: outcome.excerpt,
      },
      success: outcome.acknowledged,
      nextAttemptAt: outcome.acknowledged ? null : new Date(startedAtMs + retryDelayMs(number)),
    }).catch((err) => logger.error({ err, deliveryId: d.id }, 'delivery attempt not recorded; it will be sent again when its lease ends'));
    return { ok: outcome.acknowledged, responseCode: outcome.recordedStatus, atMs: startedAtMs + outcome.durationMs };
  }

  return {
    async loadEndpointSnapshot(endpointId: string): Promise<EndpointSnapshot | null> {
      const row = await getEndpointById(db, endpointId);
      if (!row || row.deleted_at) return null;
      return { health_status: row.health_status, failure_streak: row.failure_streak, active: row.active };
    },

    /** After deletion: what was never delivered ends `exhausted` / `endpoint_deleted`, and stays in the audit list. */
    async closeEndpoint(endpointId: string): Promise<number> {
      return exhaustOpenDeliveries(db, endpointId, 'endpoint_deleted');
    },

    /**
     * POSTs up to `limit` due deliveries (earliest first), `concurrency` at a time, records each
     * attempt on its own, and says what came of them. The round stops dispatching at its first
     * failure or when the endpoint stops sending, and gives back what it did not attempt.
     *
     * It heartbeats, so a round lost with its worker is retried within the heartbeat timeout;
     * the retry first releases the leases of the lost attempt (same round, same owner), whose
     * in-flight POSTs are the only ones sent twice.
     */
    async deliverDue(endpointId: string, nowMs: number, limit: number): Promise<DeliveryRound> {
      const { info } = Context.current();
      const owner = `${info.workflowExecution?.runId}/${info.activityId}`;
      // A retry runs later than the workflow asked; the server's clock says how much later.
      const startMs = nowMs + Math.max(0, info.currentAttemptScheduledTimestampMs - info.scheduledTimestampMs);
      const startedRealMs = Date.now();
      const clock = () => startMs + (Date.now() - startedRealMs);
      const heartbeat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        if (info.attempt > 1) await releaseLeases(db, owner);
        const readEndpoint = currentEndpoint(db, endpointId);
        const first = await readEndpoint();
        // A PATCH (deactivation, new url) may be committed before its signal reaches the workflow.
        if (!first || first.deleted_at || !sends(first.active, first.health_status))
          return { outcomes: [], more: false, nextDueAtMs: null };
        const claimed = await claimDueDeliveries(db, endpointId, new Date(startMs), limit, LEASE_MS, owner);
        const eventIds = claimed.map((d) => d.event_id).filter((id): id is string => id !== null);
        const byId = new Map((await getEventsByIds(db, eventIds)).map((e) => [e.id, e]));

        const outcomes: AttemptOutcome[] = [];
        const concurrency = deps.concurrency ?? 16;
        let stopped = false;
        await eachLimit(
          claimed,
          concurrency,
          async (d, index) => {
            // The first POSTs start with the claim; each later one reads the endpoint as it is now.
            const endpoint = index < concurrency ? first : await readEndpoint();
            if (stopped) return;
            if (!endpoint || endpoint.deleted_at || !sends(endpoint.active, endpoint.health_status)) {
              stopped = true;
              return;
            }
            try {
              const outcome = await attempt(endpoint, d, d.event_id ? byId.get(d.event_id) : undefined, clock);
              if (!outcome) return;
              outcomes.push(outcome);
              if (!outcome.ok) stopped = true;
            } catch (err) {
              logger.error({ err, deliveryId: d.id }, 'delivery attempt failed before its POST');
            }
          },
          () => stopped,
        );
        if (stopped) await releaseLeases(db, owner);
        return { outcomes, more: claimed.length === limit && !stopped, nextDueAtMs: ms(await nextDueAt(db, endpointId)) };
      } finally {
        clearInterval(heartbeat);
      }
    },

    async recordHealth(
      endpointId: string,
      h: {
        health: HealthStatus;
        failureStreak: number;
        lastSuccessAtMs: number | null;
        lastFailureAtMs: number | null;
        lastResponseCode: number | null;
        nextAttemptAtMs: number | null;
        pausedAtMs: number | null;
        observedAtMs: number;
      },
    ): Promise<void> {
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

    /** Ends holds older than 14 days; returns when the next hold expires. */
    async expireHeld(endpointId: string, nowMs: number): Promise<number | null> {
      return ms((await expireHeldDeliveries(db, endpointId, new Date(nowMs), HOLD_MS)).nextExpiryAt);
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

export type EndpointActivities = ReturnType<typeof createActivities>;
