/**
 * When the endpoint workflow acts next (DECISIONS, retry curve, two levels): the earliest
 * moment a failing endpoint may POST again, its `next_attempt_at`, and how long the workflow
 * may sleep. Pure and deterministic: the workflow passes its state and its own clock.
 */
import { sends, type Health } from './health.js';
import { retryDelayMs } from './retry-curve.js';

/**
 * POSTs per delivery session while the endpoint is healthy; one while it is failing. A session
 * also ends on its own (nothing due, a failure, its time is up), so this only bounds its result.
 */
export const BATCH = 100_000;
/** How long an idle workflow waits before re-reading its endpoint anyway (a signal may have been lost). */
export const RECONCILE_MS = 60 * 60 * 1000;

/** The part of the workflow's state the schedule depends on; times are ms since epoch. */
export interface ScheduleState {
  active: boolean;
  health: Health;
  failureStreak: number;
  /** Whether the workflow last saw the endpoint sending (its held deliveries follow this). */
  sending?: boolean;
  lastFailureAtMs?: number | null;
  /** The earliest next attempt among the endpoint's due deliveries. */
  nextDueAtMs?: number | null;
  /** When the next held delivery expires. */
  nextExpiryAtMs?: number | null;
}

/** How many POSTs the next session may make. */
export function roundLimit(s: ScheduleState): number {
  return s.failureStreak > 0 ? 1 : BATCH;
}

/** Failing (streak > 0): no POST before the last failure plus the curve at the streak. Null when healthy. */
export function failingNotBefore(s: ScheduleState): number | null {
  if (s.failureStreak === 0 || s.lastFailureAtMs == null) return null;
  return s.lastFailureAtMs + retryDelayMs(s.failureStreak);
}

/** When the next POST will be: the endpoint's `next_attempt_at`. Null while it does not send or nothing is due. */
export function nextPostAt(s: ScheduleState): number | null {
  if (!sends(s.active, s.health) || s.nextDueAtMs == null) return null;
  const notBefore = failingNotBefore(s);
  return notBefore === null ? s.nextDueAtMs : Math.max(s.nextDueAtMs, notBefore);
}

/** What the workflow next has to do on its own: POST while sending, else expire a hold. */
export function nextWakeAt(s: ScheduleState): number | null {
  return s.sending ? nextPostAt(s) : (s.nextExpiryAtMs ?? null);
}

/**
 * How long the workflow may wait for a signal, and whether running out of that wait means
 * re-reading the endpoint (nothing scheduled sooner than the hourly reconcile).
 */
export function idleWait(s: ScheduleState, nowMs: number): { delayMs: number; reconcile: boolean } {
  const scheduled = nextWakeAt(s);
  const reconcileAt = nowMs + RECONCILE_MS;
  if (scheduled === null || scheduled >= reconcileAt) return { delayMs: RECONCILE_MS, reconcile: true };
  return { delayMs: scheduled - nowMs, reconcile: false };
}

/** Whether a held delivery is due to expire by now. */
export function expiryDue(s: ScheduleState, nowMs: number): boolean {
  return s.nextExpiryAtMs != null && nowMs >= s.nextExpiryAtMs;
}
