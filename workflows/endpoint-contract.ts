/**
 * The endpoint workflow's public contract: its id, signals and input. Imported by the
 * workflow and by the code that signals it, so names cannot drift apart.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Health } from '../core/health.js';

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
export const endpointStateQuery = defineQuery<EndpointWorkflowState>('state');

/** Carried across continue-as-new; times are absolute (ms since epoch) because timers are not. */
export interface EndpointWorkflowState {
  health: Health;
  failureStreak: number;
  active: boolean;
  changesSeen: number;
  wakeups: number;
  /** Whether the endpoint was sending when last looked at (held deliveries follow this). */
  sending?: boolean;
  lastSuccessAtMs?: number | null;
  lastFailureAtMs?: number | null;
  lastResponseCode?: number | null;
  streakStartedAtMs?: number | null;
  pausedAtMs?: number | null;
  nextDueAtMs?: number | null;
  nextExpiryAtMs?: number | null;
  delivered?: number;
  /** The `next_attempt_at` last written to the endpoint, so it is written only when it moves. */
  recordedNextAttemptAtMs?: number | null;
  /** For the story in the Web UI (current details): host and path, backlog counts, the last failure's kind. */
  urlLabel?: string | null;
  owed?: number | null;
  held?: number | null;
  lastError?: string | null;
  lastFailureCode?: number | null;
}

export function endpointWorkflowId(endpointId: string): string {
  return `endpoint/${endpointId}`;
}
