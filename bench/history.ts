/**
 * What endpoint workflows cost in Temporal: their histories (every run, following
 * continue-as-new back from the newest), counted within a time window.
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { endpointWorkflowId } from '../src/workflows/endpoint-contract.js';

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const { EventType } = proto.temporal.api.enums.v1;

/** Every event of every run of the endpoint's workflow, oldest run first. */
export async function endpointHistory(client: Client, endpointId: string): Promise<{ runs: number; events: HistoryEvent[] }> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined;
  for (;;) {
    const history = await client.workflow.getHandle(endpointWorkflowId(endpointId), runId).fetchHistory();
    const events = history.events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    if (!runId) break;
  }
  return { runs: runs.length, events: runs.flat() };
}

/** Wake signals the workflow got after `afterMs` (and before `beforeMs`), and when the last one came. */
export function signalsAfter(events: HistoryEvent[], afterMs: number, beforeMs = Infinity): { count: number; lastMs: number | null } {
  const times = events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    .map((e) => tsToMs(e.eventTime))
    .filter((t) => t > afterMs && t < beforeMs);
  return { count: times.length, lastMs: times.length ? Math.max(...times) : null };
}

/** One line per event (ms since `originMs`, type, activity): for reading a workflow's timeline by eye. */
export function historyTimeline(events: HistoryEvent[], originMs: number): string {
  const names = new Map<string, string>();
  return events
    .map((e) => {
      const type = EventType[e.eventType!]?.replace('EVENT_TYPE_', '') ?? String(e.eventType);
      if (e.activityTaskScheduledEventAttributes)
        names.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
      const ref = e.activityTaskStartedEventAttributes?.scheduledEventId ?? e.activityTaskCompletedEventAttributes?.scheduledEventId;
      const activity = e.activityTaskScheduledEventAttributes?.activityType?.name ?? (ref != null ? names.get(String(ref)) : '') ?? '';
      return `${(tsToMs(e.eventTime) - originMs).toFixed(0)}\t${type}\t${activity}`;
    })
    .join('\n');
}

export interface HistoryCost {
  events: number;
  workflowTasks: number;
  signals: number;
  /** deliverDue activities: one per round */
  rounds: number;
  activities: number;
  /** Median time a round (deliverDue) ran, scheduled to completed. */
  roundMsP50: number;
  /** Median time from a round's completion to the next round's scheduling: the workflow's turn between rounds. */
  gapMsP50: number;
  /** Median time from a wake-up signal reaching an idle workflow to its round's activity starting on the worker. */
  wakeToRoundMsP50: number;
}

const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]! : 0);

/** Counts the events whose time falls in [fromMs, toMs]. */
export function historyCost(events: HistoryEvent[], fromMs: number, toMs: number): HistoryCost {
  const inWindow = events.filter((e) => {
    const t = tsToMs(e.eventTime);
    return t >= fromMs && t <= toMs;
  });
  const scheduled = new Map<string, { name: string; atMs: number }>();
  const roundMs: number[] = [];
  const gapMs: number[] = [];
  let lastRoundEndMs: number | null = null;
  const wakeToRound: number[] = [];
  let signalledAtMs: number | null = null;
  let roundRunning = false;
  for (const e of inWindow) {
    const t = tsToMs(e.eventTime);
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) lastRoundEndMs = null;
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      const name = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
      scheduled.set(String(e.eventId), { name, atMs: t });
      if (name === 'deliverDue' && lastRoundEndMs !== null) gapMs.push(t - lastRoundEndMs);
    }
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && !roundRunning) signalledAtMs ??= t;
    if (
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED &&
      scheduled.get(String(e.activityTaskStartedEventAttributes?.scheduledEventId))?.name === 'deliverDue'
    ) {
      roundRunning = true;
      if (signalledAtMs !== null) wakeToRound.push(t - signalledAtMs);
      signalledAtMs = null;
    }
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const s = scheduled.get(String(e.activityTaskCompletedEventAttributes?.scheduledEventId));
      if (s?.name === 'deliverDue') {
        roundRunning = false;
        roundMs.push(t - s.atMs);
        lastRoundEndMs = t;
      }
    }
  }
  const count = (type: number) => inWindow.filter((e) => e.eventType === type).length;
  return {
    events: inWindow.length,
    workflowTasks: count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
    signals: count(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
    rounds: [...scheduled.values()].filter((s) => s.name === 'deliverDue').length,
    activities: scheduled.size,
    roundMsP50: median(roundMs),
    gapMsP50: median(gapMs),
    wakeToRoundMsP50: median(wakeToRound),
  };
}

/** The hops of one wake-up, in ms, as the workflow's history dates them (null when the history lacks one). */
export interface WakeHops {
  /** From `fromMs` (the publish) to the wake signal's arrival in the history: API commit, NOTIFY, the worker's router, the signal. */
  toSignalMs: number;
  /** Signal → its workflow task started on the worker (matching, sticky queue). */
  signalToTaskMs: number;
  /** The workflow task itself (activation on the worker, its completion reaching the server). */
  taskMs: number;
  /** Workflow task completed → the delivery session's activity started (activity dispatch). */
  taskToActivityMs: number;
  /** When the session's activity started, relative to `fromMs`: the rest, to the receiver, is the session's own start and its first POST. */
  activityStartedMs: number;
}

/** The first wake-up after `fromMs`: its signal, the workflow task that took it, the deliverDue that task scheduled. */
export function wakeHops(events: HistoryEvent[], fromMs: number): WakeHops | null {
  const at = (e: HistoryEvent | undefined) => (e ? tsToMs(e.eventTime) : NaN);
  const i = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && tsToMs(e.eventTime) >= fromMs);
  if (i < 0) return null;
  const after = events.slice(i);
  const started = after.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const completed = after.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  const scheduled = after.find(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverDue',
  );
  const activity = after.find(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED &&
      String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(scheduled?.eventId),
  );
  if (!started || !completed || !activity) return null;
  return {
    toSignalMs: at(events[i]) - fromMs,
    signalToTaskMs: at(started) - at(events[i]),
    taskMs: at(completed) - at(started),
    taskToActivityMs: at(activity) - at(completed),
    activityStartedMs: at(activity) - fromMs,
  };
}
