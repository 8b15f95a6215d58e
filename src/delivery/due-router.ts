/**
 * Routes news of due deliveries: a notification for an endpoint whose delivery session runs in
 * this worker pokes that session; with direct sessions (src/delivery/direct-sessions.ts), one for a
 * healthy endpoint starts its session here, with no workflow task; any other becomes a wake signal
 * to the endpoint's workflow (sent at once, a bounded number in flight). A sweep finds what a lost notification left behind
 * (no worker listening, a dropped connection), at start, after a reconnect, and every `sweepEveryMs`.
 *
 * One deployment per channel: the sweep wakes every overdue endpoint of the database, so
 * deployments sharing a database must not run it (tests turn it off).
 */
import type { SessionRegistry } from './session-registry.js';
import { findOverdueEndpoints, parseDuePayload, type DueEndpoint } from '../db/due-notifications.js';
import { takeBackLostSessions } from '../db/session-leases.js';
import { keepListening } from '../db/notification-listener.js';
import type { Db } from '../db/pool.js';
import { SESSION_LEASE_MS } from '../core/runtime-limits.js';
import { logger } from '../runtime/logger.js';
import type { EndpointWorkflows } from './workflow-client.js';
import type { DirectSessions } from './direct-sessions.js';

export interface DueRouterOptions {
  databaseUrl: string;
  db: Db;
  channel: string;
  sessions: SessionRegistry;
  workflows: Pick<EndpointWorkflows, 'wake'>;
  /** 0: no sweep at all. */
  sweepEveryMs: number;
  /** SIGNALS_IN_FLIGHT unless given. */
  signalsInFlight?: number;
  /** SIGNAL_EVERY_MS unless given (tests shorten it). */
  signalEveryMs?: number;
  /** Healthy endpoints' sessions run here, without their workflows (DIRECT_SESSIONS); none when unset. */
  direct?: DirectSessions;
  /** How often lost sessions' leases are looked for (half the session lease unless given; never without the sweep). */
  lostEveryMs?: number;
}

export interface DueRouter {
  /** Resolves once listening (or after the first failed try: it keeps trying on its own). */
  ready: Promise<void>;
  sweep(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A workflow signalled this recently, whose session has not opened here since, is about to start
 * it, and its first claim takes all the work committed before it: more signals would only cost
 * workflow tasks. Once its session opens, the next news that finds no session is signalled at once.
 * Re-signalled after this long only if no session opened here (a lost signal, or the session runs
 * in another worker): with a hundred endpoints woken at once on a busy machine, sessions took 0.5 s
 * to start at load 9 and 5.6 s at load 16 (at 250 ms each workflow got 2.2 signals; at 1 s, 4.5).
 */
const SIGNAL_EVERY_MS = 3_000;
/**
 * Wake signals sent at once at most; more wait their turn, first come first served. Each goes as
 * soon as a place is free, never in a batch behind the slowest signal of an earlier one: a hundred
 * endpoints woken together (the first publishes to idle endpoints) each start their session as
 * soon as Temporal answers for them. The router's interval per endpoint is what keeps them few.
 */
const SIGNALS_IN_FLIGHT = 32;

/** Sends `send(key, value)` for each added key, `limit` at a time; a key already waiting is not queued twice. */
function createSignalQueue(send: (key: string, value: string) => Promise<void>, limit: number) {
  const waiting = new Map<string, string>();
  const inFlight = new Set<Promise<void>>();
  const pump = () => {
    for (const [key, value] of waiting) {
      if (inFlight.size >= limit) return;
      waiting.delete(key);
      const sent = send(key, value).finally(() => {
        inFlight.delete(sent);
        pump();
      });
      inFlight.add(sent);
    }
  };
  return {
    add(key: string, value: string) {
      waiting.set(key, value);
      pump();
    },
    /** Resolves once everything added so far has been sent. */
    async flush(): Promise<void> {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}

/**
 * News for endpoints with no session here, to their workflows: coalesced signals, and until its
 * session starts an endpoint's workflow is woken once per `signalEveryMs` at most (the first news at
 * once, later news at the end of that interval if no session took it by then).
 */
function startWaking(o: DueRouterOptions) {
  const signalEveryMs = o.signalEveryMs ?? SIGNAL_EVERY_MS;
  const signals = createSignalQueue(
    (endpointId, accountId) =>
      o.workflows.wake(endpointId, accountId).catch((err) => logger.warn({ err, endpointId }, 'wake signal failed')),
    o.signalsInFlight ?? SIGNALS_IN_FLIGHT,
  );
  const signalledAt = new Map<string, number>();
  const trailing = new Map<string, NodeJS.Timeout>();
  const wake = (due: DueEndpoint) => {
    const now = Date.now();
    const last = signalledAt.get(due.endpointId);
    if (last === undefined || now - last >= signalEveryMs) {
      signalledAt.set(due.endpointId, now);
      signals.add(due.endpointId, due.accountId);
      return;
    }
    if (trailing.has(due.endpointId)) return;
    const retry = () => {
      trailing.delete(due.endpointId);
      signalledAt.delete(due.endpointId);
      route(due);
    };
    trailing.set(due.endpointId, setTimeout(retry, last + signalEveryMs - now));
  };
  const { start: startDirect, stop: stopDirect } = directStarts(o, wake, (due) => route(due));
  const route = (due: DueEndpoint) => {
    if (o.sessions.poke(due.endpointId)) return;
    // Its workflow was signalled moments ago (it was no endpoint for a direct session): the same again, coalesced.
    const last = signalledAt.get(due.endpointId);
    if (o.direct && (last === undefined || Date.now() - last >= signalEveryMs)) startDirect(due);
    else wake(due);
  };
  // A session opened here: its first claim covers the news so far, and news after it pokes it.
  o.sessions.onOpen((endpointId) => {
    signalledAt.delete(endpointId);
    clearTimeout(trailing.get(endpointId));
    trailing.delete(endpointId);
  });
  const forgetOld = setInterval(() => {
    const now = Date.now();
    for (const [endpointId, at] of signalledAt) if (now - at >= signalEveryMs) signalledAt.delete(endpointId);
  }, 10 * signalEveryMs);
  forgetOld.unref();
  return {
    route,
    async close() {
      clearInterval(forgetOld);
      for (const timer of trailing.values()) clearTimeout(timer);
      stopDirect();
      await o.direct?.close();
      await signals.flush();
    },
  };
}

/**
 * News for an endpoint with no session here, to a direct session: started, or `wake` (its workflow
 * must look), or, while another session holds the endpoint, looked at again when that lease would
 * lapse (a live holder renews it, and looks for due work itself when it gives it back; a lost one
 * lets it lapse, and this worker takes over).
 */
function directStarts(o: DueRouterOptions, wake: (due: DueEndpoint) => void, route: (due: DueEndpoint) => void) {
  const starting = new Set<string>();
  /**
   * Endpoints held by another session, looked at again when its lease would lapse. `elsewhere`:
   * another worker's session, which hears the same news and pokes it; asking again before then
   * cost two statements per publish.
   */
  const later = new Map<string, { timer: NodeJS.Timeout; elsewhere: boolean }>();
  const forget = (endpointId: string) => {
    clearTimeout(later.get(endpointId)?.timer);
    later.delete(endpointId);
  };
  const start = (due: DueEndpoint) => {
    // Its session opens before its first claim, which takes the work of this news too.
    if (starting.has(due.endpointId) || later.get(due.endpointId)?.elsewhere) return;
    starting.add(due.endpointId);
    o.direct!.start(due).then(
      (r) => {
        starting.delete(due.endpointId);
        if (r.kind === 'workflow') wake(due);
        else if (r.kind === 'busy' && !later.has(due.endpointId)) {
          const again = () => {
            forget(due.endpointId);
            route(due);
          };
          later.set(due.endpointId, { timer: setTimeout(again, Math.max(50, r.inMs + 50)), elsewhere: r.elsewhere });
        }
      },
      (err) => {
        starting.delete(due.endpointId);
        logger.warn({ err, endpointId: due.endpointId }, 'direct session not started; its workflow is woken instead');
        wake(due);
      },
    );
  };
  o.sessions.onOpen(forget);
  // Work found as a session gave its lease back: no longer anyone's, whatever this worker heard before.
  o.direct?.onFreed((due) => {
    forget(due.endpointId);
    route(due);
  });
  return {
    start,
    stop() {
      for (const { timer } of later.values()) clearTimeout(timer);
      later.clear();
    },
  };
}

export function startDueRouter(o: DueRouterOptions): DueRouter {
  const { route, close: stopWaking } = startWaking(o);
  let closed = false;
  let sweepTimer: NodeJS.Timeout | undefined;

  async function sweep(): Promise<void> {
    if (o.sweepEveryMs === 0) return;
    try {
      for (const due of await findOverdueEndpoints(o.db, o.sweepEveryMs)) route(due);
    } catch (err) {
      logger.warn({ err }, 'sweep for overdue deliveries failed; the next one tries again');
    }
  }

  const listener = keepListening({
    databaseUrl: o.databaseUrl,
    channel: o.channel,
    what: 'due deliveries',
    onNotification: (payload) => {
      const due = parseDuePayload(payload);
      if (due) route(due);
    },
    // Notifications sent while nobody listened are gone: look for their work.
    onUp: sweep,
    onDown: () => {},
  });
  if (o.sweepEveryMs > 0) {
    const every = () => {
      sweepTimer = setTimeout(() => void sweep().finally(() => !closed && every()), o.sweepEveryMs);
    };
    every();
  }
  // Sessions lost with their worker (kill -9): their leases lapse, and their endpoints are routed again.
  // Of the whole database, like the sweep: off with it (deployments sharing a database).
  const lostTimer =
    o.direct && o.sweepEveryMs > 0
      ? setInterval(
          () => {
            takeBackLostSessions(o.db).then(
              (lost) => lost.forEach(route),
              (err) => logger.warn({ err }, 'look for lost delivery sessions failed; the next one tries again'),
            );
          },
          o.lostEveryMs ?? SESSION_LEASE_MS / 2,
        )
      : undefined;

  return {
    ready: listener.ready,
    sweep,
    async close() {
      closed = true;
      clearTimeout(sweepTimer);
      clearInterval(lostTimer);
      await listener?.close();
      await stopWaking();
    },
  };
}
