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
