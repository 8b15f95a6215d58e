/**
 * The endpoint workflow's public contract: its id, signals and input. Imported by the
 * workflow and by the code that signals it, so names cannot drift apart.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';

export type EndpointChange = 'created' | 'updated' | 'verified' | 'deleted';

export interface EndpointWorkflowInput {
  endpointId: string;
  accountId: string;
}

export const endpointChangedSignal = defineSignal<[{ change: EndpointChange }]>('endpointChanged');
/** Coalesced "there is work in Postgres": never one signal per event. */
export const wakeSignal = defineSignal<[]>('wake');
export const endpointStateQuery = defineQuery<EndpointWorkflowState>('state');

export interface EndpointWorkflowState {
  health: string;
  failureStreak: number;
  active: boolean;
  changesSeen: number;
  wakeups: number;
}

export function endpointWorkflowId(endpointId: string): string {
  return `endpoint/${endpointId}`;
}
