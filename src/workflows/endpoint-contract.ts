/**
 * The endpoint workflow's public contract: its id, signals and input. Imported by the
 * workflow and by the code that signals it, so names cannot drift apart.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { DeliveryRound } from '../delivery/delivery-session.js';
import type { EndpointHealth } from '../core/health.js';

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
  /**
   * POSTs made by this run's and its predecessors' own sessions and by the direct sessions whose
   * rounds were handed over to them (failures); not those of direct sessions of successes only,
   * which tell the workflow nothing (the deliveries' records count every POST).
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
    delivered: 0,
    recordedNextAttemptAtMs: null,
    urlLabel: null,
    owed: null,
    held: null,
    lastError: null,
    lastFailureCode: null,
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

export function endpointWorkflowId(endpointId: string): string {
  return `endpoint/${endpointId}`;
}
