/**
 * The transitions of an endpoint (SPEC 3.1, 3.2 and DECISIONS), in one place: what a PATCH
 * changes, what a signed test does, and what real deliveries do to the failure streak (owner
 * alerts at 5, 10 and 15, `degraded` from 5, `paused` at 15; a success resets it all).
 * Pure: the API and the endpoint workflow apply these and persist the result.
 */
export const HEALTH_STATUSES = ['unverified', 'healthy', 'degraded', 'paused'] as const;
export type Health = (typeof HEALTH_STATUSES)[number];

export const ALERT_STREAKS = [5, 10, 15] as const;
export const DEGRADED_AT = 5;
export const PAUSE_AT = 15;
/** A held delivery expires this long after it became held. */
export const HOLD_MS = 14 * 24 * 60 * 60 * 1000;

export interface HealthState {
  health: Health;
  failureStreak: number;
}

export interface Transition extends HealthState {
  /** The streak just reached an alert threshold: tell the Account owner. */
  alert: (typeof ALERT_STREAKS)[number] | null;
  /** The circuit just opened. */
  paused: boolean;
}

export function afterSuccess(_s: HealthState): Transition {
  return { health: 'healthy', failureStreak: 0, alert: null, paused: false };
}

export function afterFailure(s: HealthState): Transition {
  const failureStreak = s.failureStreak + 1;
  const alert = ALERT_STREAKS.find((a) => a === failureStreak) ?? null;
  if (failureStreak >= PAUSE_AT) return { health: 'paused', failureStreak, alert, paused: s.health !== 'paused' };
  const health: Health = failureStreak >= DEGRADED_AT ? 'degraded' : s.health === 'unverified' ? 'unverified' : 'healthy';
  return { health, failureStreak, alert, paused: false };
}

/** What the tenant configures on an endpoint, secrets in clear (the caller opens and seals them). */
export interface EndpointConfig {
  url: string;
  events: string[];
  active: boolean;
  customerId: string | null;
  secret: string;
  authorization: string | null;
}

/** A PATCH body, parsed: `undefined` leaves a field alone; an empty or null Authorization removes it. */
export interface EndpointPatch {
  url?: string;
  events?: string[];
  active?: boolean;
  customerId?: string | null;
  secret?: string;
  authorization?: string | null;
}

export type PatchPlan =
  | { refused: 'verification_required' }
  | {
      refused?: never;
      /** Only what differs from the current configuration: repeating a PATCH changes nothing. */
      changes: Partial<EndpointConfig>;
      /** A new url or Authorization: the verification no longer holds (health `unverified`, verified_at null). */
      invalidatesVerification: boolean;
      /** The endpoint stops sending with this change, so it has no next attempt from the commit on. */
      stopsSending: boolean;
    };

/** SPEC 3.2 for PATCH /webhooks/{id}. Reactivation goes only through a 2xx test (DECISIONS: 409). */
export function planPatch(current: EndpointConfig, patch: EndpointPatch): PatchPlan {
  if (patch.active === true && !current.active) return { refused: 'verification_required' };
  const changes: Partial<EndpointConfig> = {};
  if (patch.url !== undefined && patch.url !== current.url) changes.url = patch.url;
  if (patch.events !== undefined && patch.events.join() !== current.events.join()) changes.events = patch.events;
  if (patch.active === false && current.active) changes.active = false;
  if (patch.customerId !== undefined && patch.customerId !== current.customerId) changes.customerId = patch.customerId;
  if (patch.secret !== undefined && patch.secret !== current.secret) changes.secret = patch.secret;
  if (patch.authorization !== undefined) {
    const wanted = patch.authorization === '' ? null : patch.authorization;
    if (wanted !== current.authorization) changes.authorization = wanted;
  }
  const invalidatesVerification = changes.url !== undefined || changes.authorization !== undefined;
  return { changes, invalidatesVerification, stopsSending: invalidatesVerification || changes.active === false };
}

/** A new endpoint (SPEC 2.1): unverified, no streak, active as requested (an intention). */
export function newEndpoint(active: boolean): HealthState & { active: boolean } {
  return { health: 'unverified', failureStreak: 0, active };
}

/**
 * A signed test (SPEC 3.2): a 2xx verifies the configuration, resets the streak, closes the
 * circuit and activates the endpoint; any other answer changes none of that (null).
 */
export function afterTest(acknowledged: boolean): (HealthState & { active: true; pausedAt: null }) | null {
  return acknowledged ? { health: 'healthy', failureStreak: 0, active: true, pausedAt: null } : null;
}

/** Whether an endpoint in this state POSTs at all (SPEC 3.1). */
export function sends(active: boolean, health: Health): boolean {
  return active && (health === 'healthy' || health === 'degraded');
}

/** Why a POST failed: the kinds the attempt records and the workflow's story name. */
export type AttemptError = 'timeout' | 'connection_error' | 'tls_error' | 'blocked_destination' | 'non_2xx';

/** What one POST of a delivery round came to; `atMs` is when its answer (or error) came. */
export interface AttemptOutcome {
  ok: boolean;
  responseCode: number | null;
  atMs: number;
  /** A failure's kind (`timeout`, `non_2xx`, ...), for the workflow's story; absent from older rounds. */
  error?: string | null;
}

/** The endpoint's health with the observations the endpoint record shows. */
export interface EndpointHealth extends HealthState {
  lastSuccessAtMs: number | null;
  lastFailureAtMs: number | null;
  lastResponseCode: number | null;
  /** When the current streak began: it keys the streak's alerts, so each goes out once. */
  streakStartedAtMs: number | null;
  pausedAtMs: number | null;
}

/** The health a state carries; observations it has not made yet are null. */
export function endpointHealthOf(s: HealthState & Partial<EndpointHealth>): EndpointHealth {
  return {
    health: s.health,
    failureStreak: s.failureStreak,
    lastSuccessAtMs: s.lastSuccessAtMs ?? null,
    lastFailureAtMs: s.lastFailureAtMs ?? null,
    lastResponseCode: s.lastResponseCode ?? null,
    streakStartedAtMs: s.streakStartedAtMs ?? null,
    pausedAtMs: s.pausedAtMs ?? null,
  };
}

export interface StreakAlert {
  streak: (typeof ALERT_STREAKS)[number];
  streakStartedAtMs: number;
}

/**
 * What a long delivery session reports of its POSTs: at most four of them, with the same effect
 * on health as all of them (`afterRound`). Only the first failure counts toward the streak;
 * successes before it set the state it meets; after it, any success resets the streak, and only
 * the latest success, the latest failure and the latest code show. So it keeps the last success
 * before the first failure, the first failure, the last success and the last failure.
 */
export function compactOutcomes(outcomes: readonly AttemptOutcome[]): AttemptOutcome[] {
  const sorted = [...outcomes].sort((a, b) => a.atMs - b.atMs);
  const first = sorted.findIndex((o) => !o.ok);
  const firstFailure = first < 0 ? undefined : sorted[first];
  const before = first < 0 ? sorted : sorted.slice(0, first);
  const lastOf = (list: AttemptOutcome[], ok: boolean) => [...list].reverse().find((o) => o.ok === ok);
  const kept = new Set([lastOf(before, true), firstFailure, lastOf(sorted, true), lastOf(sorted, false)]);
  kept.delete(undefined);
  return sorted.filter((o) => kept.has(o));
}

/**
 * Folds a round's outcomes, in the order their answers came, into the endpoint's health.
 * A round stops dispatching at its first failure, so every later failure of the same round was
 * already in flight then: together they count as ONE failure of the streak (DECISIONS), and
 * a receiver's blip costs one step of the streak, not one per concurrent POST. Every success
 * counts: the receiver answered.
 */
export function afterRound(before: EndpointHealth, outcomes: readonly AttemptOutcome[]): { health: EndpointHealth; alerts: StreakAlert[] } {
  const h = { ...before };
  const alerts: StreakAlert[] = [];
  let failureCounted = false;
  for (const o of [...outcomes].sort((a, b) => a.atMs - b.atMs)) {
    h.lastResponseCode = o.responseCode;
    if (o.ok) {
      ({ health: h.health, failureStreak: h.failureStreak } = afterSuccess(h));
      h.lastSuccessAtMs = o.atMs;
      h.streakStartedAtMs = null;
      continue;
    }
    h.lastFailureAtMs = o.atMs;
    if (failureCounted) continue;
    failureCounted = true;
    const t = afterFailure(h);
    ({ health: h.health, failureStreak: h.failureStreak } = t);
    h.streakStartedAtMs ??= o.atMs;
    if (t.alert) alerts.push({ streak: t.alert, streakStartedAtMs: h.streakStartedAtMs });
    if (t.paused) h.pausedAtMs = o.atMs;
  }
  return { health: h, alerts };
}
