/**
 * One long-lived workflow per endpoint (id `endpoint/<id>`). It is the endpoint's
 * scheduler: it learns of every configuration change by signal, reads and writes
 * Postgres only through activities, and never carries event payloads in its history.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { EndpointActivities } from '../activities/index.js';
import {
  endpointChangedSignal,
  endpointStateQuery,
  wakeSignal,
  type EndpointChange,
  type EndpointWorkflowInput,
  type EndpointWorkflowState,
} from './endpoint-contract.js';
import { AccountIdAttribute, EndpointHealthAttribute, FailureStreakAttribute } from './search-attributes.js';

const { loadEndpointSnapshot, closeEndpoint } = proxyActivities<EndpointActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

export async function endpointWorkflow(input: EndpointWorkflowInput, carried?: EndpointWorkflowState): Promise<void> {
  const state: EndpointWorkflowState = carried ?? { health: 'unverified', failureStreak: 0, active: true, changesSeen: 0, wakeups: 0 };
  const pending: EndpointChange[] = [];
  let woken = false;

  setHandler(endpointChangedSignal, ({ change }) => {
    pending.push(change);
  });
  setHandler(wakeSignal, () => {
    woken = true;
  });
  setHandler(endpointStateQuery, () => state);

  for (;;) {
    await condition(() => pending.length > 0 || woken);
    if (woken) {
      woken = false;
      state.wakeups++;
    }
    if (pending.length > 0) {
      // Changes are coalesced: the snapshot read after them reflects them all.
      const changes = pending.splice(0);
      state.changesSeen += changes.length;
      // A deletion wins over anything queued before or after it, and an endpoint gone from
      // Postgres is closed the same way.
      const snapshot = changes.includes('deleted') ? null : await loadEndpointSnapshot(input.endpointId);
      if (!snapshot) {
        await closeEndpoint(input.endpointId);
        return;
      }
      state.health = snapshot.health_status;
      state.failureStreak = snapshot.failure_streak;
      state.active = snapshot.active;
      upsertSearchAttributes([
        { key: AccountIdAttribute, value: input.accountId },
        { key: EndpointHealthAttribute, value: state.health },
        { key: FailureStreakAttribute, value: state.failureStreak },
      ]);
    }
    if (workflowInfo().continueAsNewSuggested && pending.length === 0 && !woken) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof endpointWorkflow>(input, state);
    }
  }
}
