/**
 * The endpoint workflow's public contract: its signals, its input, and the activities it asks for.
 * Imported by the workflow, by the code that signals it and by the activities, so names cannot drift apart.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { AttemptOutcome, EndpointHealth, Health } from '../core/health.js';

/** What one delivery session came to: the workflow applies it to the endpoint's health. */
export interface DeliveryRound {
  /** What came of the POSTs, compacted to at most four with the same effect on health (`compactOutcomes`). */
  outcomes: AttemptOutcome[];
  /** The session ended with work possibly left due (its limit, its time, a cancellation): look again at once. */
  more: boolean;
  nextDueAtMs: number | null;
  /** How many POSTs were made (absent from rounds recorded before sessions, whose outcomes were all of them). */
  posts?: number;
  /** Deliveries still owed and not held when the session ended, for the workflow's story (absent from older rounds). */
  owed?: number;
  /**
   * Every POST succeeded on an endpoint healthy with no streak, and the session recorded that on the
   * endpoint itself (`reportSession`): the workflow need not (absent from older rounds).
   */
  healthRecorded?: boolean;
}

/** What `expireHeld` leaves: when the next hold expires, and how many deliveries are held. */
export interface HoldsLeft {
  nextExpiryAtMs: number | null;
  held: number;
}

export interface EndpointSnapshot {
  health_status: Health;
  failure_streak: number;
  active: boolean;
  /** Host and path only, for the workflow's story in the Web UI (absent from older histories). */
  url_label?: string;
  /** When the last 2xx test verified it, ms since epoch (absent from older histories). */
  verified_at_ms?: number | null;
}

/** The endpoint's health as the workflow records it on the endpoint row (its streak's start aside), as of `observedAtMs`. */
export type HealthRecord = Omit<EndpointHealth, 'streakStartedAtMs'> & { nextAttemptAtMs: number | null; observedAtMs: number };

/**
 * The activities the endpoint workflow asks for (src/delivery/activities.ts carries them out).
 * Written here, beside the signals, so the workflow depends on its contract and not on the I/O.
 */
export interface EndpointActivities {
  loadEndpointSnapshot(endpointId: string): Promise<EndpointSnapshot | null>;
  closeEndpoint(endpointId: string): Promise<number>;
  deliverDue(endpointId: string, nowMs: number, limit: number): Promise<DeliveryRound>;
  recordHealth(endpointId: string, h: HealthRecord): Promise<void>;
  recordNextAttempt(endpointId: string, nextAttemptAtMs: number | null): Promise<void>;
  holdDeliveries(endpointId: string, nowMs: number): Promise<number>;
  releaseDeliveries(endpointId: string, nowMs: number): Promise<number>;
  expireHeld(endpointId: string, nowMs: number): Promise<HoldsLeft>;
  alertOwner(endpointId: string, streak: number, streakStartedAtMs: number): Promise<void>;
}

export type EndpointChange = 'created' | 'updated' | 'verified' | 'deleted';

export interface EndpointWorkflowInput {
  endpointId: string;
  accountId: string;
  /**
   * For tests: continue as new once a run has taken in this many change signals, as when
   * Temporal suggests it (the time-skipping test server never does). Absent in production;
   * it travels with the input into every later run.
   */
  continueAsNewAfterChanges?: number;
  /**
   * The endpoint as its create committed it, when the create started the workflow: the first run
   * takes it instead of reading the row, and looks for no work (a delivery fanned out to it since
   * comes with news, which wakes the workflow). Absent from older histories, from workflows a
   * wake-up started, and from every run after the first.
   */
  created?: EndpointSnapshot;
}

export const endpointChangedSignal = defineSignal<[{ change: EndpointChange }]>('endpointChanged');
/** Coalesced "there is work in Postgres": never one signal per event. */
export const wakeSignal = defineSignal<[]>('wake');
/**
 * A direct session's round (src/delivery/direct-sessions.ts: run by a worker without a workflow task, on
 * a healthy endpoint) that the workflow must apply as if its own session had it: a failure, or
 * successes it could not record. `observedAtMs`: when the session opened (a verification after it wins).
 */
export interface HandedOverRound {
  round: DeliveryRound;
  observedAtMs: number;
}
export const roundHandedOverSignal = defineSignal<[HandedOverRound]>('roundHandedOver');
/**
 * What direct sessions of successes only did since the last report (src/delivery/session-reports.ts):
 * they recorded it on the endpoint themselves, and tell the workflow for its story (current
 * details) only, coalesced to at most one report per endpoint per `REPORT_EVERY_MS`. The workflow
 * takes it in without a command (`applyReport`): it changes nothing it decides.
 */
export interface DirectSessionsReport {
  /** Sessions of successes only reported (each recorded its latest success on the endpoint). */
  sessions: number;
  /** Their POSTs, every one a success. */
  posts: number;
  /** The latest of their successes, and its HTTP code. */
  lastSuccessAtMs: number;
  lastResponseCode: number | null;
  /** When the last of these sessions ended (worker's clock). */
  endedAtMs: number;
}
export const sessionsReportedSignal = defineSignal<[DirectSessionsReport]>('sessionsReported');
export const endpointStateQuery = defineQuery<EndpointWorkflowState>('state');

/**
 * The workflow's state, carried across continue-as-new; times are absolute (ms since epoch)
 * because timers are not. Every field has its default in `initialState()`.
 */
export interface EndpointWorkflowState extends EndpointHealth {
  active: boolean;
  changesSeen: number;
  wakeups: number;
  /** Whether the endpoint was sending when last looked at (held deliveries follow this). */
  sending: boolean;
  nextDueAtMs: number | null;
  nextExpiryAtMs: number | null;
  /** The endpoint's last verification as last read (null: never, or read before the snapshot had it). */
  verifiedAtMs: number | null;
  /**
   * POSTs made by this run's and its predecessors' own sessions and by the direct sessions whose
   * rounds were handed over to them (failures); not those of direct sessions of successes only,
   * which their reports count (`directPosts`).
   */
  delivered: number;
  /** The `next_attempt_at` last written to the endpoint, so it is written only when it moves. */
  recordedNextAttemptAtMs: number | null;
  /** For the story in the Web UI (current details): host and path, backlog counts (null: unknown), the last failure's kind. */
  urlLabel: string | null;
  owed: number | null;
  held: number | null;
  /** Undefined only when carried from a run that failed before the kind was recorded: the story says "reason not recorded". */
  lastError: string | null | undefined;
  lastFailureCode: number | null;
  /** Direct sessions of successes only reported to it (`DirectSessionsReport`), their POSTs, the last report's session end. */
  directSessions: number;
  directPosts: number;
  directReportedAtMs: number | null;
}

/**
 * What a run starts with: the state continued from an earlier run, possibly of an older version of
 * the workflow (recorded histories carry only the first five fields and some of the others).
 */
export type CarriedState = Pick<EndpointWorkflowState, 'health' | 'failureStreak' | 'active' | 'changesSeen' | 'wakeups'> &
  Partial<EndpointWorkflowState>;

/** A new endpoint's workflow: unverified, active, nothing known yet. */
export function initialState(): EndpointWorkflowState {
  return {
    health: 'unverified',
    failureStreak: 0,
    active: true,
    changesSeen: 0,
    wakeups: 0,
    sending: false,
    lastSuccessAtMs: null,
    lastFailureAtMs: null,
    lastResponseCode: null,
    streakStartedAtMs: null,
    pausedAtMs: null,
    nextDueAtMs: null,
    nextExpiryAtMs: null,
    verifiedAtMs: null,
    delivered: 0,
    recordedNextAttemptAtMs: null,
    urlLabel: null,
    owed: null,
    held: null,
    lastError: null,
    lastFailureCode: null,
    directSessions: 0,
    directPosts: 0,
    directReportedAtMs: null,
  };
}

/** The state a run works with: what it was carried, and the defaults for whatever that lacks. */
export function withDefaults(carried?: CarriedState): EndpointWorkflowState {
  if (!carried) return initialState();
  const known = Object.fromEntries(Object.entries(carried).filter(([, v]) => v !== undefined));
  // A carried state without `lastError` comes from a run that did not record it.
  return { ...initialState(), lastError: undefined, ...known };
}

/** Takes in what a round did to the endpoint's health (`afterRound`). */
export function applyHealth(state: EndpointWorkflowState, h: EndpointHealth): void {
  state.health = h.health;
  state.failureStreak = h.failureStreak;
  state.lastSuccessAtMs = h.lastSuccessAtMs;
  state.lastFailureAtMs = h.lastFailureAtMs;
  state.lastResponseCode = h.lastResponseCode;
  state.streakStartedAtMs = h.streakStartedAtMs;
  state.pausedAtMs = h.pausedAtMs;
}

/**
 * Takes in a report of direct sessions of successes only: counts, and the latest success when it is
 * later than the one the workflow knows (with its code, unless a failure came after it). Health,
 * streak and schedule stay the workflow's own: nothing here changes what it decides.
 */
export function applyReport(state: EndpointWorkflowState, r: DirectSessionsReport): void {
  state.directSessions += r.sessions;
  state.directPosts += r.posts;
  state.directReportedAtMs = Math.max(state.directReportedAtMs ?? r.endedAtMs, r.endedAtMs);
  if (state.lastSuccessAtMs !== null && state.lastSuccessAtMs >= r.lastSuccessAtMs) return;
  state.lastSuccessAtMs = r.lastSuccessAtMs;
  if (state.lastFailureAtMs === null || state.lastFailureAtMs < r.lastSuccessAtMs) state.lastResponseCode = r.lastResponseCode;
}

export function endpointWorkflowId(endpointId: string): string {
  return `endpoint/${endpointId}`;
}
