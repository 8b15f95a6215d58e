/**
 * A delivery's truthful `next_attempt_at` (DECISIONS, retry curve, two levels): its own next
 * attempt is only half of it. While its endpoint fails (streak > 0) the endpoint sends one POST
 * at a time, no sooner than the last failure plus the curve at the streak, earliest next attempt
 * first; while the endpoint does not send at all, there is no next attempt. Pure: the audit list
 * applies it to each row with what it read of the endpoint.
 */
import { sends, type Health } from './health.js';
import { failingNotBefore } from './schedule.js';

/**
 * Why `next_attempt_at` is what it is, when it is not simply the delivery's own next attempt:
 * - `endpoint_paused`, `endpoint_inactive`, `endpoint_unverified`: the endpoint does not send; no time (null).
 * - `endpoint_pacing`: first in line on a failing endpoint; the time is its next POST (exact).
 * - `endpoint_queue`: behind others on a failing endpoint; the time is the earliest it can go
 *   (each delivery ahead of it takes one POST, spaced on the curve if they keep failing).
 */
export const NEXT_ATTEMPT_REASONS = [
  'endpoint_paused',
  'endpoint_inactive',
  'endpoint_unverified',
  'endpoint_pacing',
  'endpoint_queue',
] as const;
export type NextAttemptReason = (typeof NEXT_ATTEMPT_REASONS)[number];

export interface DeliveryTiming {
  id: string;
  status: string;
  /** A `webhook.test` row has no event and is never attempted again. */
  hasEvent: boolean;
  /** The delivery's own next attempt (last attempt plus the curve at its attempts), ms since epoch. */
  nextAttemptAtMs: number | null;
}

/** What the endpoint's pacing depends on, as committed. */
export interface EndpointPacing {
  active: boolean;
  health: Health;
  failureStreak: number;
  lastFailureAtMs: number | null;
  deleted: boolean;
  /** The owed delivery the endpoint sends next: earliest next attempt, then oldest (as the claim orders them). */
  firstInLineId: string | null;
}

export interface NextAttempt {
  nextAttemptAtMs: number | null;
  reason: NextAttemptReason | null;
}

const OPEN = new Set(['pending', 'failed']);

/**
 * Whether the endpoint's pacing can change the delivery's next attempt: only an open delivery of
 * an event's. A page with none (any page of a terminal status) needs no read of its endpoints.
 */
export function pacingApplies(d: Pick<DeliveryTiming, 'status' | 'hasEvent'>): boolean {
  return OPEN.has(d.status) && d.hasEvent;
}

export function nextAttemptOf(d: DeliveryTiming, ep: EndpointPacing | undefined): NextAttempt {
  const own: NextAttempt = { nextAttemptAtMs: d.nextAttemptAtMs, reason: null };
  // Terminal rows, test sends and the rows of a deleted endpoint (closed by its workflow) keep their own value.
  if (!pacingApplies(d) || !ep || ep.deleted) return own;
  if (!sends(ep.active, ep.health)) {
    const reason = !ep.active ? 'endpoint_inactive' : ep.health === 'paused' ? 'endpoint_paused' : 'endpoint_unverified';
    return { nextAttemptAtMs: null, reason };
  }
  const notBefore = failingNotBefore({
    failureStreak: ep.failureStreak,
    lastFailureAtMs: ep.lastFailureAtMs,
    active: true,
    health: ep.health,
  });
  if (notBefore === null || d.nextAttemptAtMs === null) return own;
  const at = Math.max(d.nextAttemptAtMs, notBefore);
  if (d.id === ep.firstInLineId) return { nextAttemptAtMs: at, reason: at > d.nextAttemptAtMs ? 'endpoint_pacing' : null };
  return { nextAttemptAtMs: at, reason: 'endpoint_queue' };
}
