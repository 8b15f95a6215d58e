/**
 * What the endpoint workflow tells an operator in the Temporal Web UI: the one-line summary of
 * the workflow list, the Markdown of its current details (health, streak, next POST, what is
 * owed and held, the last failure), and a summary on each timer and activity saying what it
 * waits for or does. Pure and deterministic (the workflow passes its own clock), and free of
 * payloads and secrets: a url shows only its host and path.
 */
import { HOLD_MS, sends, type Health } from './health.js';
import { retryDelayMs } from './retry-curve.js';
import { failingNotBefore, nextPostAt, type ScheduleState } from './schedule.js';

/** Host and path of an endpoint url: no scheme, credentials, query or fragment (they may carry secrets). */
export function endpointLabel(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return 'unreadable url';
  }
}

/**
 * Markdown for a Web UI details panel, whole. The Web UI (2.42) renders it in an iframe whose height
 * it sets once, at load, to the body's scrollHeight + 2 px; the page's body margins (32 px) are left
 * out, so the bottom ~30 px of the text were cut: the last line, half of it or all (measured in
 * Chromium against the dev server's Web UI). A last paragraph of one no-break space, which shows as
 * nothing, takes the cut instead.
 */
export function framedForWebUi(markdown: string): string {
  return `${markdown.trimEnd()}\n\n\u00a0\n`;
}

/** The workflow list's line (static summary), set when the workflow starts. */
export function workflowSummary(ref: { endpointId: string; accountId: string; url?: string | null }): string {
  const what = ref.url ? endpointLabel(ref.url) : `endpoint ${ref.endpointId}`;
  return `${what} · account ${ref.accountId}`;
}

/** The workflow's static details: who it belongs to, and where its live story is. */
export function workflowStaticDetails(ref: { endpointId: string; accountId: string; url?: string | null }): string {
  return framedForWebUi(
    [
      `Endpoint \`${ref.endpointId}\` of Account \`${ref.accountId}\`${ref.url ? `, posting to ${endpointLabel(ref.url)}` : ''}.`,
      'Its scheduler and circuit breaker: the current details show its health, failure streak, next POST and backlog.',
    ].join('\n\n'),
  );
}

/** "59 s", "8 min", "1 h 30 min", "14 days". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  const days = Math.round(h / 24);
  return `${days} days`;
}

/** To the second: the details are for reading. */
const iso = (ms: number | null | undefined) => (ms == null ? null : `${new Date(ms).toISOString().slice(0, 19)}Z`);

/** What the story shows: the workflow's state, with what its activities told it. */
export interface StoryState extends ScheduleState {
  /** The endpoint's host and path (`endpointLabel`), as its activity read it: no URL parsing in workflow code. */
  urlLabel?: string | null;
  lastSuccessAtMs?: number | null;
  lastResponseCode?: number | null;
  /** The last failed POST's error kind (`timeout`, `non_2xx`, ...) and HTTP code (null: no answer). */
  lastError?: string | null;
  lastFailureCode?: number | null;
  streakStartedAtMs?: number | null;
  pausedAtMs?: number | null;
  /** Open deliveries not held, as of the last session (capped by the count). */
  owed?: number | null;
  /** Held deliveries, as of the last look at holds. */
  held?: number | null;
  delivered?: number;
  /** Direct sessions of successes only that reported to the workflow, their POSTs, and their last report's end. */
  directSessions?: number;
  directPosts?: number;
  directReportedAtMs?: number | null;
}

/** Why an endpoint does not send (SPEC 3.1), or null when it does. */
export function stoppedBecause(s: { active: boolean; health: Health }): string | null {
  if (sends(s.active, s.health)) return null;
  if (!s.active) return 'inactive';
  return s.health === 'paused' ? 'paused (circuit open)' : 'unverified';
}

/** Why the next POST is when it is. */
function nextPostWhy(s: StoryState): string {
  const notBefore = failingNotBefore(s);
  if (notBefore !== null && nextPostAt(s) === notBefore) return curveStep(s.failureStreak);
  return s.failureStreak > 0 ? 'the earliest delivery’s own retry time' : 'the earliest delivery’s own time';
}

/** "retry 4 of the curve: 8 min after the last failure". */
export function curveStep(streak: number): string {
  return `retry ${streak} of the curve: ${formatDuration(retryDelayMs(streak))} after the last failure`;
}

/** The workflow's current details (Markdown), as of `nowMs`; `doing` names what it is busy with. */
export function currentDetails(ref: { endpointId: string; accountId: string }, s: StoryState, nowMs: number, doing?: string): string {
  const stopped = stoppedBecause(s);
  const next = nextPostAt(s);
  const pace = s.failureStreak > 0 ? 'one POST at a time' : 'concurrent POSTs';
  const lines = [
    `**${s.urlLabel ?? `endpoint ${ref.endpointId}`}** · account \`${ref.accountId}\``,
    '',
    `- **health**: ${s.health}, ${s.active ? 'active' : 'inactive'}: ${stopped ? `not sending (${stopped}), deliveries held` : `sending, ${pace}`}`,
    `- **failure streak**: ${s.failureStreak}${s.failureStreak > 0 && s.streakStartedAtMs ? ` since ${iso(s.streakStartedAtMs)}` : ''}`,
    `- **next POST**: ${next !== null ? `${iso(next)} (${nextPostWhy(s)})` : stopped ? 'none while not sending' : 'none: nothing due'}`,
    `- **deliveries owed**: ${count(s.owed)} waiting, ${count(s.held)} held${s.nextExpiryAtMs ? `; next hold expiry ${iso(s.nextExpiryAtMs)}` : ''}`,
    `- **last failure**: ${s.lastFailureAtMs ? `${iso(s.lastFailureAtMs)}, ${failureReason(s)}` : 'none'}`,
    `- **last success**: ${s.lastSuccessAtMs ? `${iso(s.lastSuccessAtMs)}${s.lastResponseCode != null && (s.lastFailureAtMs ?? 0) <= s.lastSuccessAtMs ? `, HTTP ${s.lastResponseCode}` : ''}` : 'none'}`,
  ];
  if (s.pausedAtMs) lines.push(`- **paused at**: ${iso(s.pausedAtMs)} (a 2xx test closes the circuit)`);
  if (doing) lines.push(`- **now**: ${doing}`);
  // Direct sessions of successes (src/delivery/direct-sessions.ts) report to the workflow, coalesced
  // (src/delivery/session-reports.ts): the last success above includes theirs as of their last report.
  lines.push(
    `- **POSTs**: ${s.delivered ?? 0} by the workflow's sessions (and direct sessions that failed)`,
    `- **direct sessions**: ${directLine(s)}`,
    '',
    `_as of ${iso(nowMs)}_`,
  );
  return framedForWebUi(lines.join('\n'));
}

function directLine(s: StoryState): string {
  if (!s.directSessions) return 'none reported';
  return `${s.directPosts ?? 0} POSTs, all 2xx, in ${s.directSessions} session${s.directSessions === 1 ? '' : 's'}, reported up to ${iso(s.directReportedAtMs)}`;
}

const count = (n: number | null | undefined) => (n == null ? 'unknown' : n >= 10_000 ? '10000+' : String(n));

function failureReason(s: StoryState): string {
  if (s.lastError === undefined) return 'reason not recorded';
  const code = s.lastFailureCode != null ? `HTTP ${s.lastFailureCode}` : 'no answer';
  return s.lastError ? `${code} (${s.lastError})` : code;
}

/** The summary of the timer the workflow waits on. */
export function waitSummary(s: StoryState, wait: { delayMs: number; reconcile: boolean }, nowMs: number): string {
  const stopped = stoppedBecause(s);
  if (wait.reconcile) {
    const expiry = !s.sending && s.nextExpiryAtMs != null ? `; hold expiry in ${formatDuration(s.nextExpiryAtMs - nowMs)}` : '';
    return `idle (${stopped ? `not sending: ${stopped}` : 'nothing due'}${expiry}): re-read the endpoint in ${formatDuration(wait.delayMs)}`;
  }
  if (!s.sending) return `hold expiry in ${formatDuration(wait.delayMs)}`;
  return `next POST in ${formatDuration(wait.delayMs)}: ${nextPostWhy(s)}`;
}

/** The summary of a delivery session. */
export function deliverSummary(s: StoryState): string {
  return s.failureStreak > 0
    ? `deliver due: 1 POST, earliest first (failing, streak ${s.failureStreak})`
    : 'deliver due: concurrent lanes until the first failure';
}

/** Summaries of the workflow's other activities. */
export const activitySummaries = {
  load: (changes: readonly string[]) => `read the endpoint${changes.length ? ` (told: ${[...new Set(changes)].join(', ')})` : ''}`,
  close: 'endpoint deleted: its undelivered deliveries end endpoint_deleted',
  hold: (s: { active: boolean; health: Health }) => `hold the backlog: endpoint ${stoppedBecause(s) ?? 'sending'}`,
  holdNew: 'hold deliveries accepted while not sending',
  release: 'release held deliveries: the endpoint sends again',
  expire: `expire holds older than ${formatDuration(HOLD_MS)}`,
  health: (s: StoryState, next: number | null) => `record health: ${s.health}, streak ${s.failureStreak}, next POST ${iso(next) ?? 'none'}`,
  nextAttempt: (next: number | null) => `record next_attempt_at: ${iso(next) ?? 'none'}`,
  alert: (streak: number) => `alert the Account owner: failure streak ${streak}`,
};
