/**
 * One long-lived workflow per endpoint (id `endpoint/<id>`): the endpoint's scheduler and
 * circuit breaker. It learns of configuration changes and new work by signal, owns the
 * failure streak and health, decides when the next POST may go, holds and expires the
 * backlog, and reads and writes Postgres only through activities. It never carries event
 * payloads or secrets in its history.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { EndpointActivities } from '../activities/index.js';
import { afterRound, sends, type EndpointHealth } from '../core/health.js';
import { retryDelayMs } from '../core/retry-curve.js';
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
const { recordHealth, recordNextAttempt, holdDeliveries, releaseDeliveries, expireHeld, alertOwner } = proxyActivities<EndpointActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
const { deliverDue } = proxyActivities<EndpointActivities>({
  // A round is at most BATCH POSTs of 10 s each, 16 at a time: about 2 minutes at worst.
  startToCloseTimeout: '3 minutes',
  // It heartbeats every 2 s: a round lost with its worker is retried within seconds, not minutes.
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** POSTs per round while the endpoint is healthy (fewer rounds, fewer workflow tasks); one while it is failing. */
const BATCH = 200;
/** How long an idle workflow waits before re-reading its endpoint anyway. */
const RECONCILE_MS = 60 * 60 * 1000;
/** Workflows that predate the delivery engine replay without it. */
const DELIVERY_ENGINE = 'delivery-engine';

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

  const engine = patched(DELIVERY_ENGINE);
  // A new run looks at Postgres before anything else: it may have been started by a wake-up,
  // not a change, and a first run knows nothing of the endpoint yet.
  let reload = engine && !carried;
  if (engine) woken = true;

  for (;;) {
    if (engine) {
      // Idle at most an hour: a signal lost while Temporal was unreachable is made good by
      // re-reading the endpoint.
      const scheduled = nextWakeAt(state);
      const reconcileAt = Date.now() + RECONCILE_MS;
      const wakeAt = scheduled === null ? reconcileAt : Math.min(scheduled, reconcileAt);
      if (wakeAt > Date.now()) {
        const signalled = await condition(() => pending.length > 0 || woken, wakeAt - Date.now());
        if (!signalled && wakeAt === reconcileAt) reload = true;
      }
    } else {
      await condition(() => pending.length > 0 || woken);
    }
    const wasWoken = woken;
    if (woken) {
      woken = false;
      state.wakeups++;
    }
    if (pending.length > 0 || reload) {
      reload = false;
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
      if (engine && state.failureStreak > 0 && snapshot.failure_streak === 0) state.streakStartedAtMs = null;
      state.health = snapshot.health_status;
      state.failureStreak = snapshot.failure_streak;
      state.active = snapshot.active;
      if (engine && snapshot.health_status !== 'paused') state.pausedAtMs = null;
      publishSearchAttributes(input, state);
    }
    if (engine) {
      const wasSending = state.sending ?? false;
      await followAdmission(input, state);
      await deliver(input, state);
      // Holds are looked at when they may have changed: just held, new work arrived, or one is due to expire.
      const expiryDue = state.nextExpiryAtMs != null && Date.now() >= state.nextExpiryAtMs;
      if (!state.sending && (wasWoken || wasSending || expiryDue)) {
        // Deliveries accepted while not sending start their hold now.
        if (wasWoken) await holdDeliveries(input.endpointId, Date.now());
        state.nextExpiryAtMs = await expireHeld(input.endpointId, Date.now());
      }
      await showNextAttempt(input, state);
    }
    if (workflowInfo().continueAsNewSuggested && pending.length === 0 && !woken) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof endpointWorkflow>(input, state);
    }
  }
}

function publishSearchAttributes(input: EndpointWorkflowInput, state: EndpointWorkflowState): void {
  upsertSearchAttributes([
    { key: AccountIdAttribute, value: input.accountId },
    { key: EndpointHealthAttribute, value: state.health },
    { key: FailureStreakAttribute, value: state.failureStreak },
  ]);
}

/** Held deliveries follow the endpoint: held while it does not send (SPEC 3.1), resumed when it does again. */
async function followAdmission(input: EndpointWorkflowInput, state: EndpointWorkflowState): Promise<void> {
  const sending = sends(state.active, state.health);
  if (sending === (state.sending ?? false)) return;
  state.sending = sending;
  if (sending) await releaseDeliveries(input.endpointId, Date.now());
  else await holdDeliveries(input.endpointId, Date.now());
}

/**
 * Sends what is due. Healthy: rounds of up to BATCH concurrent POSTs. Failing (streak > 0):
 * one POST at a time, no sooner than the last failure plus the curve at the streak.
 */
async function deliver(input: EndpointWorkflowInput, state: EndpointWorkflowState): Promise<void> {
  while (state.sending) {
    const now = Date.now();
    const notBefore = failingNotBefore(state);
    if (notBefore !== null && now < notBefore) return;
    const round = await deliverDue(input.endpointId, now, state.failureStreak > 0 ? 1 : BATCH);
    state.nextDueAtMs = round.nextDueAtMs;
    if (round.outcomes.length === 0) {
      if (round.more) continue;
      return;
    }
    const { health, alerts } = afterRound(healthOf(state), round.outcomes);
    Object.assign(state, health);
    state.delivered = (state.delivered ?? 0) + round.outcomes.length;
    for (const alert of alerts) await alertOwner(input.endpointId, alert.streak, alert.streakStartedAtMs);
    const nextAttemptAtMs = nextPostAt(state);
    await recordHealth(input.endpointId, { ...health, nextAttemptAtMs, observedAtMs: now });
    state.recordedNextAttemptAtMs = nextAttemptAtMs;
    publishSearchAttributes(input, state);
    if (state.health === 'paused') {
      // The circuit is open: the backlog is held until a 2xx test.
      await followAdmission(input, state);
      return;
    }
    if (!round.more && state.failureStreak === 0) return;
  }
}

function healthOf(state: EndpointWorkflowState): EndpointHealth {
  return {
    health: state.health,
    failureStreak: state.failureStreak,
    lastSuccessAtMs: state.lastSuccessAtMs ?? null,
    lastFailureAtMs: state.lastFailureAtMs ?? null,
    lastResponseCode: state.lastResponseCode ?? null,
    streakStartedAtMs: state.streakStartedAtMs ?? null,
    pausedAtMs: state.pausedAtMs ?? null,
  };
}

/** Keeps the endpoint's `next_attempt_at` true when the schedule moves outside a round (a hold, a release, a verification). */
async function showNextAttempt(input: EndpointWorkflowInput, state: EndpointWorkflowState): Promise<void> {
  const next = nextPostAt(state);
  if (next === (state.recordedNextAttemptAtMs ?? null)) return;
  await recordNextAttempt(input.endpointId, next);
  state.recordedNextAttemptAtMs = next;
}

function failingNotBefore(state: EndpointWorkflowState): number | null {
  if (state.failureStreak === 0 || state.lastFailureAtMs == null) return null;
  return state.lastFailureAtMs + retryDelayMs(state.failureStreak);
}

/** When the next POST will be: the endpoint's `next_attempt_at` (none while it does not send). */
function nextPostAt(state: EndpointWorkflowState): number | null {
  if (!sends(state.active, state.health) || state.nextDueAtMs == null) return null;
  const notBefore = failingNotBefore(state);
  return notBefore === null ? state.nextDueAtMs : Math.max(state.nextDueAtMs, notBefore);
}

function nextWakeAt(state: EndpointWorkflowState): number | null {
  const times = [state.sending ? nextPostAt(state) : null, state.sending ? null : (state.nextExpiryAtMs ?? null)].filter((t): t is number => t !== null);
  return times.length ? Math.min(...times) : null;
}
