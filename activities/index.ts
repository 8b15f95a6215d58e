/**
 * The I/O the endpoint workflow asks for. Activities return small records, never event
 * payloads or secrets, so workflow histories stay small and secret-free. Every activity
 * takes the workflow's clock (`nowMs`): the workflow is the scheduler, and its time is the
 * one that decides what is due.
 */
import { getEventDefinition } from '../core/catalog/index.js';
import { HOLD_MS, sends } from '../core/health.js';
import { retryDelayMs } from '../core/retry-curve.js';
import { webhookBody } from '../core/webhook-body.js';
import {
  claimDueDeliveries,
  exhaustOpenDeliveries,
  expireHeldDeliveries,
  holdOpenDeliveries,
  nextDueAt,
  recordDeliveryAttempt,
  releaseHeldDeliveries,
  type ClaimedDelivery,
} from '../db/deliveries.js';
import { getAccount } from '../db/directory.js';
import { getEndpointById, recordEndpointHealth, type EndpointRow, type HealthStatus } from '../db/endpoints.js';
import type { EventRow } from '../db/events.js';
import { enqueueNotification } from '../db/plan-usage.js';
import type { Db } from '../db/pool.js';
import type { HttpClient } from '../delivery/http-client.js';
import { sendToEndpoint } from '../delivery/send-webhook.js';
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

export interface AttemptOutcome {
  ok: boolean;
  responseCode: number | null;
  atMs: number;
}

export interface DeliveryRound {
  outcomes: AttemptOutcome[];
  /** The batch was full: more may be due now. */
  more: boolean;
  nextDueAtMs: number | null;
}

// Longer than a round may last (its activity's start-to-close), so a lease never ends under a live attempt.
const LEASE_MS = 4 * 60_000;
const ms = (d: Date | null) => (d ? d.getTime() : null);

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i]!);
    }),
  );
  return results;
}

export function createActivities(deps: ActivityDeps) {
  const { db } = deps;

  async function attempt(endpoint: EndpointRow, d: ClaimedDelivery, event: EventRow | undefined, nowMs: number): Promise<AttemptOutcome | null> {
    const def = getEventDefinition(d.event_type);
    if (!event || !def) {
      // The event left the stream (deleted) after the delivery was claimed.
      await db.query(`UPDATE deliveries SET status = 'exhausted', terminal_reason = 'event_deleted', leased_until = NULL, updated_at = now() WHERE id = $1`, [d.id]);
      return null;
    }
    const body = Buffer.from(JSON.stringify(webhookBody(def, event)), 'utf8');
    const startedAt = new Date(nowMs);
    const outcome = await sendToEndpoint(deps.httpClient, deps.secretBox, endpoint, { eventType: d.event_type, idempotencyKey: d.idempotency_key, body });
    webhookSends.inc({ kind: 'delivery', outcome: outcome.acknowledged ? 'success' : (outcome.error ?? 'failure') });
    const number = d.attempts + 1;
    await recordDeliveryAttempt(db, {
      id: d.id,
      number,
      attempt: { startedAt, durationMs: outcome.durationMs, responseCode: outcome.recordedStatus, error: outcome.error, responseExcerpt: outcome.excerpt },
      success: outcome.acknowledged,
      nextAttemptAt: outcome.acknowledged ? null : new Date(nowMs + retryDelayMs(number)),
    });
    return { ok: outcome.acknowledged, responseCode: outcome.recordedStatus, atMs: nowMs + outcome.durationMs };
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

    /** POSTs up to `limit` due deliveries (earliest first), records each attempt, and says what came of them. */
    async deliverDue(endpointId: string, nowMs: number, limit: number): Promise<DeliveryRound> {
      const endpoint = await getEndpointById(db, endpointId);
      if (!endpoint || endpoint.deleted_at) return { outcomes: [], more: false, nextDueAtMs: null };
      // A PATCH (deactivation, new url) may be committed before its signal reaches the workflow.
      if (!sends(endpoint.active, endpoint.health_status)) return { outcomes: [], more: false, nextDueAtMs: null };
      const claimed = await claimDueDeliveries(db, endpointId, new Date(nowMs), limit, LEASE_MS);
      const eventIds = claimed.map((d) => d.event_id).filter((id): id is string => id !== null);
      const { rows: events } = eventIds.length ? await db.query<EventRow>(`SELECT * FROM events WHERE id = ANY($1::uuid[])`, [eventIds]) : { rows: [] };
      const byId = new Map(events.map((e) => [e.id, e]));
      const outcomes = await mapLimit(claimed, deps.concurrency ?? 16, (d) => attempt(endpoint, d, d.event_id ? byId.get(d.event_id) : undefined, nowMs));
      return { outcomes: outcomes.filter((o): o is AttemptOutcome => o !== null), more: claimed.length === limit, nextDueAtMs: ms(await nextDueAt(db, endpointId)) };
    },

    async recordHealth(
      endpointId: string,
      h: { health: HealthStatus; failureStreak: number; lastSuccessAtMs: number | null; lastFailureAtMs: number | null; lastResponseCode: number | null; nextAttemptAtMs: number | null; pausedAtMs: number | null; observedAtMs: number },
    ): Promise<void> {
      const d = (v: number | null) => (v === null ? null : new Date(v));
      await recordEndpointHealth(
        db,
        endpointId,
        { health: h.health, failureStreak: h.failureStreak, lastSuccessAt: d(h.lastSuccessAtMs), lastFailureAt: d(h.lastFailureAtMs), lastResponseCode: h.lastResponseCode, nextAttemptAt: d(h.nextAttemptAtMs), pausedAt: d(h.pausedAtMs) },
        new Date(h.observedAtMs),
      );
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
