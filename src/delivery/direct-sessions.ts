/**
 * Direct sessions: news of due work for a healthy endpoint (no streak, not paused, active) with
 * no session open here starts its delivery session in this worker, the same `runDeliverySession`
 * as the workflow's `deliverDue` activity, with no signal, workflow task or activity: a wake-up
 * costs Temporal nothing. The endpoint row's session lease (src/delivery/session-leases.ts) keeps it
 * to one session per endpoint across workers, direct or the workflow's.
 *
 * A session of successes records them itself (`reportSession`) and tells the workflow only
 * for its story: a report, coalesced per endpoint (src/delivery/session-reports.ts). A round with a failure (the session stops at its first, as every session does) is
 * handed to the endpoint's workflow by signal, which applies it as it applies its own rounds;
 * the lease leaves a hand-over mark meanwhile, so no session starts until the workflow has taken
 * it in (then on the curve, one POST at a time). The deliveries a direct session claims get short
 * leases, renewed with its endpoint's while it lives: a killed worker's work comes back in seconds.
 */
import crypto from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { needsWorkflow, runDeliverySession, type SessionDeps } from './delivery-session.js';
import type { DeliveryRound, DirectSessionsReport } from '../workflows/endpoint-contract.js';
import type { SessionLeases } from './session-leases.js';
import type { SessionPreference } from './session-preference.js';
import { doublingBackoffMs } from '../core/backoff.js';
import { HANDOVER_TIMEOUT_MS } from '../core/runtime-limits.js';
import { BATCH } from '../core/schedule.js';
import type { DueEndpoint } from '../db/due-notifications.js';
import type { EndpointRow } from '../db/endpoints.js';
import { traceHop } from '../runtime/hop-trace.js';
import { logger } from '../runtime/logger.js';
import type { EndpointWorkflows } from './workflow-client.js';
import { createSessionReports, type SessionReports } from './session-reports.js';

/** What became of news for an endpoint with no session here. */
export type DirectStart =
  | { kind: 'started' }
  /**
   * Another session holds the endpoint for `inMs` more: look again then. `elsewhere`: it is another
   * worker's, which hears the same news (not one of this worker's, ending).
   */
  | { kind: 'busy'; inMs: number; elsewhere: boolean }
  /** Not for a direct session: its workflow must look (failing, paused, inactive, a round handed over), or too many run here. */
  | { kind: 'workflow' }
  /** News left to the deployment's preferred worker, which hears it too (src/delivery/session-preference.ts). */
  | { kind: 'left' };

export interface DirectSessions {
  /** `heard`: news from the due channel, which every worker hears; `found`: work this worker found itself (a sweep, a lease given back or lost). */
  start(due: DueEndpoint, how?: 'heard' | 'found'): Promise<DirectStart>;
  /** Work found due when a session gave its lease back (news it missed while ending). */
  onFreed(listener: (due: DueEndpoint) => void): void;
  /** Stops the sessions running (their unsent deliveries are released) and waits for them. */
  close(): Promise<void>;
}

/** Direct sessions at once at most; news for more goes to the workflows, as before. */
const MAX_DIRECT_SESSIONS = 1_000;
/** News heard this soon after a session here gave the endpoint's lease back is asked for here, never left. */
const RECENTLY_ENDED_MS = 1_000;

export function createDirectSessions(o: {
  /** The worker's session deps (shared with its activities), with its leases. */
  deps: SessionDeps & { leases: SessionLeases };
  workflows: Pick<EndpointWorkflows, 'handOver' | 'report'>;
  maxSessions?: number;
  /** The reports of sessions of successes to the workflows; coalesced per endpoint (every `reportEveryMs`) when unset. */
  reports?: SessionReports;
  /** At most one report per endpoint this often (config DIRECT_REPORT_EVERY_MS); REPORT_EVERY_MS when unset. */
  reportEveryMs?: number;
  /** How long this worker lets the deployment's preferred worker ask first, and whether it leaves news to it (src/delivery/session-preference.ts); at once when unset. */
  preference?: Pick<SessionPreference, 'delayMs' | 'leavesNews'>;
}): DirectSessions {
  const reports =
    o.reports ?? createSessionReports({ send: (id, account, report) => o.workflows.report(id, account, report), everyMs: o.reportEveryMs });
  // The worker's shared claim: a direct session's requests ask for the session lease's time
  // (DeliveryClaims), renewed while the session lives, not LEASE_MS: no retry releases them.
  const { leases } = o.deps;
  const deps: SessionDeps = o.deps;
  const running = new Set<Promise<void>>();
  const stop = new AbortController();
  // Every running session listens for the worker's stop.
  setMaxListeners(0, stop.signal);

  async function run(due: DueEndpoint, owner: string, lease: { endpoint: EndpointRow; lastPostAgoMs: number | null }) {
    const observedAtMs = Date.now();
    const session = runDeliverySession(deps, {
      endpointId: due.endpointId,
      owner,
      clock: Date.now,
      observedAtMs,
      limit: BATCH,
      signal: stop.signal,
      leased: lease.endpoint,
      lastPostAgoMs: lease.lastPostAgoMs,
    });
    try {
      const round = await session;
      if (needsWorkflow(round)) await handOver({ workflows: o.workflows, reports, signal: stop.signal }, due, round, observedAtMs);
      else if (round.healthRecorded === true && round.outcomes.length > 0) reports.add(due.endpointId, due.accountId, reportOf(round));
    } catch (err) {
      // Its lease lapses in seconds and the worker's check for lost sessions routes the endpoint again.
      logger.error({ err, endpointId: due.endpointId }, 'direct delivery session failed');
    }
  }

  return {
    async start(due, how = 'found') {
      // The preferred worker asks at once, and an ask from here would be refused. Not news of an
      // endpoint whose session here is ending or just ended: the preferred worker, refused while it
      // ran, leaves that endpoint's news to this worker until the lease it saw would lapse, and the
      // session's last look may have missed what this news announces (a delivery waited 5 s so).
      if (how === 'heard' && o.preference?.leavesNews() && !leases.heldHereWithin(due.endpointId, RECENTLY_ENDED_MS)) {
        traceHop('left', due.endpointId);
        return { kind: 'left' };
      }
      if (stop.signal.aborted || running.size >= (o.maxSessions ?? MAX_DIRECT_SESSIONS)) return { kind: 'workflow' };
      const defer = o.preference?.delayMs() ?? 0;
      if (defer > 0) await new Promise((r) => setTimeout(r, defer));
      // Says which process holds it (pid), for an operator looking at the endpoint row.
      const owner = `direct/${process.pid}/${crypto.randomUUID()}`;
      // Held here before or after the take: one of this worker's sessions may end while it is asked.
      const heldHereBefore = leases.heldHere(due.endpointId);
      const lease = await leases.take(due.endpointId, owner, 'direct');
      traceHop(lease.granted ? 'leased' : 'lease-refused', due.endpointId);
      if (!lease.granted)
        return lease.heldMs === null
          ? { kind: 'workflow' }
          : { kind: 'busy', inMs: lease.heldMs, elsewhere: !heldHereBefore && !leases.heldHere(due.endpointId) };
      if (stop.signal.aborted) {
        await leases.end(due.endpointId, owner, { handover: false, tellIfDue: false });
        return { kind: 'workflow' };
      }
      // The session registers with the worker's registry before this returns: news from now on pokes it.
      const session = run(due, owner, lease).finally(() => running.delete(session));
      running.add(session);
      return { kind: 'started' };
    },
    onFreed: (listener) => leases.onFreed(listener),
    async close() {
      stop.abort();
      while (running.size > 0) await Promise.all(running);
      // The last reports go before the worker's Temporal connection closes.
      await reports.flush();
    },
  };
}

/** A round with a failure, to the endpoint's workflow, tried again until its lease's hand-over mark would lapse. */
async function handOver(
  o: { workflows: Pick<EndpointWorkflows, 'handOver'>; reports: SessionReports; signal: AbortSignal },
  due: DueEndpoint,
  round: DeliveryRound,
  observedAtMs: number,
): Promise<void> {
  // Successes reported before the failure: the workflow learns them first.
  await o.reports.flush(due.endpointId);
  const since = Date.now();
  for (let failures = 0; ; failures++) {
    try {
      return await o.workflows.handOver(due.endpointId, due.accountId, { round, observedAtMs });
    } catch (err) {
      // The lease's hand-over mark lapses after HANDOVER_TIMEOUT_MS: sessions start again then.
      if (Date.now() - since >= HANDOVER_TIMEOUT_MS || o.signal.aborted) {
        logger.error({ err, endpointId: due.endpointId }, 'round of a direct session not handed to its workflow');
        return;
      }
      await new Promise((r) => setTimeout(r, doublingBackoffMs(250, failures, 5_000)));
    }
  }
}

/** A session of successes only as a report: every POST a success, the latest as `afterRound` takes it. */
export function reportOf(round: DeliveryRound, endedAtMs = Date.now()): DirectSessionsReport {
  const last = round.outcomes.reduce((a, b) => (b.atMs >= a.atMs ? b : a));
  return {
    sessions: 1,
    posts: round.posts ?? round.outcomes.length,
    lastSuccessAtMs: last.atMs,
    lastResponseCode: last.responseCode,
    endedAtMs,
  };
}
