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
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { activitySummaries as says, currentDetails, deliverSummary, waitSummary } from '../core/endpoint-story.js';
import { afterRound, endpointHealthOf, sends } from '../core/health.js';
import { DELIVER_DUE_TIMEOUT_MS, HEARTBEAT_TIMEOUT_MS } from '../core/runtime-limits.js';
import { expiryDue, failingNotBefore, idleWait, nextPostAt, roundLimit } from '../core/schedule.js';
import {
  applyHealth,
  applyReport,
  endpointChangedSignal,
  endpointStateQuery,
  roundHandedOverSignal,
  sessionsReportedSignal,
  wakeSignal,
  withDefaults,
  type CarriedState,
  type DeliveryRound,
  type EndpointActivities,
  type EndpointChange,
  type EndpointSnapshot,
  type EndpointWorkflowInput,
  type EndpointWorkflowState,
  type HandedOverRound,
  type HoldsLeft,
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
  // A session dispatches for SESSION_MS, then finishes the POSTs in flight (src/core/runtime-limits.ts).
  startToCloseTimeout: DELIVER_DUE_TIMEOUT_MS,
  // It heartbeats every HEARTBEAT_EVERY_MS: a session lost with its worker is retried within seconds.
  heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** What one run keeps besides the carried state: the signals it has not yet acted on. */
interface RunSignals {
  /** Changes signalled and not yet taken in. */
  pending: EndpointChange[];
  /** Work may be due, or holds may have changed ("look"). */
  woken: boolean;
  /** The endpoint must be re-read even without a change signal. */
  reload: boolean;
  changesThisRun: number;
  /** The last wait ran out at the reconcile interval, with no signal. */
  reconciled: boolean;
  /** Rounds of direct sessions handed over and not yet applied. */
  handedOver: HandedOverRound[];
  /** What the current details last said the workflow is busy with (`tell`), kept when a report refreshes them. */
  doing?: string;
  /** The row as its create committed it (`EndpointWorkflowInput.created`), until the first take-in uses it. */
  given?: EndpointSnapshot;
}

/**
 * Since this patch, a reconcile that finds nothing new starts no delivery session, and reconciles
 * are spread over RECONCILE_JITTER_MS: ten thousand idle endpoints cost an activity and a lingering
 * session each, all in the same minute, every hour. (A healthy endpoint's due work that nobody was
 * told of is found by the workers' sweep, which wakes the workflow.)
 */
const QUIET_RECONCILE = 'quiet-reconcile';
/**
 * Since this patch, a session of successes only on a healthy endpoint records its health itself
 * (`DeliveryRound.healthRecorded`), and the workflow schedules no `recordHealth` after it: a
 * wake-up costs one activity and two workflow tasks instead of two and three, and no search
 * attribute update.
 */
const SESSION_RECORDS_HEALTH = 'session-records-health';
const isHealthyNoStreak = (h: { health: string; failureStreak: number; pausedAtMs: number | null }) =>
  h.health === 'healthy' && h.failureStreak === 0 && h.pausedAtMs === null;
const RECONCILE_JITTER_MS = 10 * 60 * 1000;
/**
 * Since this patch, workers run a healthy endpoint's sessions themselves (src/delivery/direct-sessions.ts)
 * and hand a round with a failure over by signal: the workflow applies it as it applies its own
 * session's rounds (`applyRound`), before it delivers again (then on the curve, one POST at a time).
 */
const DIRECT_SESSIONS = 'direct-sessions';

/**
 * Since this patch, a round from a session asked for before the endpoint's last verification leaves
 * its health alone, as the endpoint row does (`recordEndpointHealth` skips rows verified after the
 * round's `observedAt`), and what it left owed is due at once: it took the failure of a session
 * that ran across a deactivation and a 2xx test for a streak of the verified endpoint, and waited
 * on the curve for a next due time its report (made while all it owed was held) did not have.
 */
const VERIFICATION_WINS = 'verification-wins';

export async function endpointWorkflow(input: EndpointWorkflowInput, carried?: CarriedState): Promise<void> {
  const state = withDefaults(carried);
  // Every run starts with a pass, as if woken, and reads the endpoint before anything else: a first
  // run knows nothing of it yet (it may have been started by a wake-up alone), and a continued run
  // may carry changes it was told of. A first run its create started is given the row instead, and
  // has no backlog to look at: its activities would run just as the tenant's first events come.
  const given = carried === undefined ? input.created : undefined;
  const run: RunSignals = {
    pending: [],
    woken: given === undefined,
    reload: true,
    changesThisRun: 0,
    reconciled: false,
    handedOver: [],
    given,
  };

  setHandler(endpointChangedSignal, ({ change }) => {
    run.pending.push(change);
  });
  setHandler(wakeSignal, () => {
    run.woken = true;
  });
  setHandler(roundHandedOverSignal, (handed) => {
    run.handedOver.push(handed);
  });
  // A report of direct sessions of successes only: taken in and shown, with no command and no
  // wake-up (the condition waited on ignores it), so histories without it replay as before.
  setHandler(sessionsReportedSignal, (report) => {
    applyReport(state, report);
    tell(input, state, run, run.doing);
  });
  setHandler(endpointStateQuery, () => state);

  for (;;) {
    await idle(input, state, run);
    const wasWoken = run.woken;
    if (run.woken) {
      run.woken = false;
      state.wakeups++;
    }
    if (run.pending.length > 0 || run.reload) {
      const open = await takeInChanges(input, state, run);
      if (!open) return;
    }
    const wasSending = state.sending;
    await followAdmission(input, state);
    // (patched() asked only when a round was handed over: its marker goes in those histories only.)
    if (run.handedOver.length > 0 && patched(DIRECT_SESSIONS)) {
      for (const handed of run.handedOver.splice(0)) await applyRound(input, state, handed.round, handed.observedAtMs);
    }
    const quiet = run.reconciled && !wasWoken && state.sending === wasSending && patched(QUIET_RECONCILE);
    run.reconciled = false;
    if (!quiet) await deliver(input, state, run);
    // Holds are looked at when they may have changed: just held, new work arrived, or one is due to expire.
    if (!state.sending && (wasWoken || wasSending || expiryDue(state, Date.now()))) await lookAtHolds(input, state, wasWoken);
    await showNextAttempt(input, state);
    // Not waiting for a quiet moment: a busy endpoint is woken every few milliseconds and would never
    // have one, and its history would grow without end. Nothing is lost by going now, since the next
    // run starts by re-reading the endpoint and looking for due work (the signals only say "look").
    const forced = input.continueAsNewAfterChanges != null && run.changesThisRun >= input.continueAsNewAfterChanges;
    // A handed-over round that came meanwhile is applied first: unlike a change or a wake-up, which
    // the next run's opening pass makes good, it would be lost with this run. (Never the case in
    // histories from before direct sessions, so their commands stay the same.)
    if ((workflowInfo().continueAsNewSuggested || forced) && run.handedOver.length === 0) {
      await condition(allHandlersFinished);
      state.changesSeen += run.pending.length;
      const { created: _firstRunOnly, ...next } = input;
      await continueAsNew<typeof endpointWorkflow>(next, state);
    }
  }
}

/**
 * Waits until signalled or the schedule's next moment. Idle at most an hour: a signal lost while
 * Temporal was unreachable is made good by re-reading the endpoint.
 */
async function idle(input: EndpointWorkflowInput, state: EndpointWorkflowState, run: RunSignals): Promise<void> {
  const wait = idleWait(state, Date.now());
  tell(input, state, run);
  if (wait.delayMs <= 0) return;
  // The timer's summary says what it waits for (the Web UI shows it in the history).
  // Deterministic in a workflow (seeded per run): idle endpoints created together reconcile apart.
  const jitter = wait.reconcile && patched(QUIET_RECONCILE) ? Math.floor(Math.random() * RECONCILE_JITTER_MS) : 0;
  const delayMs = wait.delayMs + jitter;
  const signalled = await condition(() => run.pending.length > 0 || run.woken || run.handedOver.length > 0, delayMs, {
    summary: waitSummary(state, { ...wait, delayMs }, Date.now()),
  });
  if (!signalled && wait.reconcile) run.reload = run.reconciled = true;
}

/**
 * Re-reads the endpoint after the changes signalled (coalesced: the snapshot read after them
 * reflects them all). False when the endpoint is gone and the workflow has closed it.
 */
async function takeInChanges(input: EndpointWorkflowInput, state: EndpointWorkflowState, run: RunSignals): Promise<boolean> {
  run.reload = false;
  const changes = run.pending.splice(0);
  state.changesSeen += changes.length;
  run.changesThisRun += changes.length;
  const given = run.given;
  run.given = undefined;
  // A deletion wins over anything queued before or after it, and an endpoint gone from Postgres is closed the same way.
  const snapshot = changes.includes('deleted')
    ? null
    : given && changes.every((c) => c === 'created')
      ? given
      : await loadEndpointSnapshot.executeWithOptions({ summary: says.load(changes) }, [input.endpointId]);
  if (!snapshot) {
    tell(input, state, run, 'closing: the endpoint was deleted');
    await closeEndpoint.executeWithOptions({ summary: says.close }, [input.endpointId]);
    return false;
  }
  if (snapshot.url_label) state.urlLabel = snapshot.url_label;
  if (state.failureStreak > 0 && snapshot.failure_streak === 0) state.streakStartedAtMs = null;
  state.health = snapshot.health_status;
  state.failureStreak = snapshot.failure_streak;
  state.active = snapshot.active;
  if (snapshot.verified_at_ms !== undefined) state.verifiedAtMs = snapshot.verified_at_ms;
  if (snapshot.health_status !== 'paused') state.pausedAtMs = null;
  publishSearchAttributes(input, state);
  return true;
}

/** Holds deliveries accepted while not sending (they start their hold now), and expires holds past 14 days. */
async function lookAtHolds(input: EndpointWorkflowInput, state: EndpointWorkflowState, wasWoken: boolean): Promise<void> {
  if (wasWoken) await holdDeliveries.executeWithOptions({ summary: says.holdNew }, [input.endpointId, Date.now()]);
  const left = holdsLeft(await expireHeld.executeWithOptions({ summary: says.expire }, [input.endpointId, Date.now()]));
  state.nextExpiryAtMs = left.nextExpiryAtMs;
  if (left.held !== null) state.held = left.held;
}

/** The current details the Web UI shows (Markdown): what the workflow knows now, and what it is doing. */
function tell(input: EndpointWorkflowInput, state: EndpointWorkflowState, run: Pick<RunSignals, 'doing'>, doing?: string): void {
  run.doing = doing;
  setCurrentDetails(currentDetails(input, state, Date.now(), doing));
}

/** Recorded histories answer `expireHeld` with the bare expiry time; later ones add the count held. */
function holdsLeft(answer: HoldsLeft | number | null): { nextExpiryAtMs: number | null; held: number | null } {
  return answer !== null && typeof answer === 'object' ? answer : { nextExpiryAtMs: answer, held: null };
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
  if (sending === state.sending) return;
  state.sending = sending;
  if (sending) {
    await releaseDeliveries.executeWithOptions({ summary: says.release }, [input.endpointId, Date.now()]);
    // Released: nothing is held, and what is owed is counted by the next session.
    state.held = 0;
    state.owed = null;
  } else {
    await holdDeliveries.executeWithOptions({ summary: says.hold(state) }, [input.endpointId, Date.now()]);
    state.owed = 0;
  }
}

/**
 * Sends what is due. Healthy: a delivery session (concurrent POSTs for as long as work keeps
 * coming, until the first failure). Failing (streak > 0): one POST at a time, no sooner than
 * the last failure plus the curve at the streak.
 */
async function deliver(input: EndpointWorkflowInput, state: EndpointWorkflowState, run: RunSignals): Promise<void> {
  while (state.sending) {
    const now = Date.now();
    const notBefore = failingNotBefore(state);
    if (notBefore !== null && now < notBefore) return;
    const summary = deliverSummary(state);
    tell(input, state, run, summary);
    const round = await deliverDue.executeWithOptions({ summary }, [input.endpointId, now, roundLimit(state)]);
    if (round.outcomes.length === 0) {
      state.nextDueAtMs = round.nextDueAtMs;
      if (round.owed !== undefined) state.owed = round.owed;
      if (round.more) continue;
      return;
    }
    if (!(await applyRound(input, state, round, now))) return;
  }
}

/**
 * Takes in what a round of POSTs did (its own session's, or a direct session's handed over):
 * health and streak, alerts, the record of health, the pause. False when delivering stops here
 * (paused, or nothing more to do now while healthy). `observedAtMs`: when the session was asked for.
 */
async function applyRound(
  input: EndpointWorkflowInput,
  state: EndpointWorkflowState,
  round: DeliveryRound,
  observedAtMs: number,
): Promise<boolean> {
  state.nextDueAtMs = round.nextDueAtMs;
  if (round.owed !== undefined) state.owed = round.owed;
  if (round.outcomes.length === 0) return round.more;
  state.delivered += round.posts ?? round.outcomes.length;
  // Opened before the last 2xx test: the row ignored its health (recordEndpointHealth), and so does the workflow.
  const verifiedAtMs = state.verifiedAtMs;
  if (verifiedAtMs != null && observedAtMs < verifiedAtMs && patched(VERIFICATION_WINS)) {
    state.nextDueAtMs = Date.now();
    return true;
  }
  const before = endpointHealthOf(state);
  const { health, alerts } = afterRound(before, round.outcomes);
  const stayedHealthy = alerts.length === 0 && [before, health].every(isHealthyNoStreak);
  applyHealth(state, health);
  const lastFailure = round.outcomes
    .filter((o) => !o.ok)
    .sort((a, b) => a.atMs - b.atMs)
    .at(-1);
  if (lastFailure) {
    state.lastError = lastFailure.error ?? null;
    state.lastFailureCode = lastFailure.responseCode;
  }
  for (const alert of alerts) {
    await alertOwner.executeWithOptions({ summary: says.alert(alert.streak) }, [input.endpointId, alert.streak, alert.streakStartedAtMs]);
  }
  const nextAttemptAtMs = nextPostAt(state);
  // Successes only, healthy before and after: the session recorded them itself, and the search
  // attributes (health, streak) have not changed. (patched() is asked only then: its marker goes
  // in the histories of sessions it applies to.)
  if (!(round.healthRecorded === true && stayedHealthy && patched(SESSION_RECORDS_HEALTH))) {
    await recordHealth.executeWithOptions({ summary: says.health(state, nextAttemptAtMs) }, [
      input.endpointId,
      { ...health, nextAttemptAtMs, observedAtMs },
    ]);
    publishSearchAttributes(input, state);
  }
  state.recordedNextAttemptAtMs = nextAttemptAtMs;
  if (state.health === 'paused') {
    // The circuit is open: the backlog is held until a 2xx test.
    await followAdmission(input, state);
    return false;
  }
  return round.more || state.failureStreak > 0;
}

/** Keeps the endpoint's `next_attempt_at` true when the schedule moves outside a round (a hold, a release, a verification). */
async function showNextAttempt(input: EndpointWorkflowInput, state: EndpointWorkflowState): Promise<void> {
  const next = nextPostAt(state);
  if (next === state.recordedNextAttemptAtMs) return;
  await recordNextAttempt.executeWithOptions({ summary: says.nextAttempt(next) }, [input.endpointId, next]);
  state.recordedNextAttemptAtMs = next;
}
