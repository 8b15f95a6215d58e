/**
 * Endpoint health transitions of real deliveries (SPEC 3.2, DECISIONS): a failure streak,
 * owner alerts at 5, 10 and 15, `degraded` from 5, `paused` at 15; a success resets it all.
 * Pure: the endpoint workflow applies these and persists the result through an activity.
 */
export type Health = 'unverified' | 'healthy' | 'degraded' | 'paused';

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

/** Whether an endpoint in this state POSTs at all (SPEC 3.1). */
export function sends(active: boolean, health: Health): boolean {
  return active && (health === 'healthy' || health === 'degraded');
}

/** What one POST of a delivery round came to; `atMs` is when its answer (or error) came. */
export interface AttemptOutcome {
  ok: boolean;
  responseCode: number | null;
  atMs: number;
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
