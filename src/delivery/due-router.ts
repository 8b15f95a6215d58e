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
import type { AccountId, EndpointId } from '../core/ids.js';
import type { SessionRegistry } from './session-registry.js';
import { findOverdueEndpoints, parseDuePayload, type DueEndpoint } from '../db/due-notifications.js';
import { takeBackLostSessions } from '../db/session-leases.js';
import { keepListening } from '../db/notification-listener.js';
import type { Db } from '../db/pool.js';
import { SESSION_LEASE_MS, SESSION_LINGER_MS } from '../core/runtime-limits.js';
import { traceHop } from '../runtime/hop-trace.js';
import { logger } from '../runtime/logger.js';
import type { EndpointWorkflows } from './workflow-client.js';
import type { DirectSessions } from './direct-sessions.js';
import type { SessionPreference } from './session-preference.js';

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
  /**
   * News for an endpoint held by another worker's session, this long after the news before it, is
   * asked about again at once: that session has likely ended (its linger, DELIVERY_LINGER_MS, 5 s
   * unless given).
   */
  heldQuietMs?: number;
  /**
   * The deployment's preferred worker (src/delivery/session-preference.ts): told when this router
   * stops or starts hearing news; when this worker becomes the preferred one, everything due is
   * routed, overdue or not, since news the others left to the one before may have died with it.
   */
  preference?: Pick<SessionPreference, 'listening' | 'onPreferred'>;
}

export interface DueRouter {
  /** Resolves once listening (or after the first failed try: it keeps trying on its own). */
  ready: Promise<void>;
  /** Routes the work due `olderThanMs` ago or before (`sweepEveryMs` unless given) that nobody has taken; nothing without the sweep. */
  sweep(olderThanMs?: number): Promise<void>;
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

/** Sends `send(endpointId, accountId)` for each added endpoint, `limit` at a time; an endpoint already waiting is not queued twice. */
function createSignalQueue(send: (endpointId: EndpointId, accountId: AccountId) => Promise<void>, limit: number) {
  const waiting = new Map<EndpointId, AccountId>();
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
    add(endpointId: EndpointId, accountId: AccountId) {
      waiting.set(endpointId, accountId);
      pump();
    },
    /** Resolves once everything added so far has been sent. */
    async flush(): Promise<void> {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}

/**
 * What the router holds of one endpoint that has no session here; forgotten when one opens. Two
 * independent parts: the pacing of its workflow's wake signals, and the start of a direct session.
 */
interface EndpointNews {
  /** Its workflow was signalled at this time (Date.now()); news within `signalEveryMs` waits for `trailing`. */
  signalledAt?: number;
  /** News that came within the interval: routed again at its end, if no session took it by then. */
  trailing?: NodeJS.Timeout;
  /** A direct session's start is in flight: its session opens before its first claim, which takes this news too. */
  starting?: boolean;
  /**
   * While that start was in flight, a session here gave the endpoint's lease back with work due: a
   * start refused meanwhile (its answer read before that end) asks again at once instead of
   * holding the news until the lease it saw would lapse (up to 10 s; one delivery waited 5 s so).
   */
  freedMeanwhile?: boolean;
  /**
   * Held by another session: looked at again when its lease would lapse (a live holder renews it and
   * looks for due work itself when it gives it back; a lost one lets it lapse, and this worker takes
   * over). `elsewhere`: another worker's session, which hears the same news and pokes it, so news
   * here is not asked about again before then (that cost two statements per publish), unless it
   * comes `heldQuietMs` after the news before it (`lastNewsAt`, Date.now()).
   */
  held?: { timer: NodeJS.Timeout; elsewhere: boolean; lastNewsAt: number };
}

/**
 * Routes each piece of news for an endpoint: a poke to its session here; else, with direct sessions,
 * a session started here (unless its workflow was signalled moments ago); else a wake signal to its
 * workflow, at once the first time and then once per `signalEveryMs` at most.
 */
class NewsRouter {
  private readonly news = new Map<string, EndpointNews>();
  private readonly signals: ReturnType<typeof createSignalQueue>;
  private readonly signalEveryMs: number;
  private readonly heldQuietMs: number;
  private readonly forgetOld: NodeJS.Timeout;

  constructor(private readonly o: DueRouterOptions) {
    this.signalEveryMs = o.signalEveryMs ?? SIGNAL_EVERY_MS;
    this.heldQuietMs = o.heldQuietMs ?? SESSION_LINGER_MS;
    this.signals = createSignalQueue(
      (endpointId, accountId) =>
        o.workflows.wake(endpointId, accountId).catch((err) => logger.warn({ err, endpointId }, 'wake signal failed')),
      o.signalsInFlight ?? SIGNALS_IN_FLIGHT,
    );
    // A session opened here: its first claim covers the news so far, and news after it pokes it.
    o.sessions.onOpen((endpointId) => this.forget(endpointId));
    // Work found as a session gave its lease back: no longer anyone's, whatever this worker heard before.
    o.direct?.onFreed((due) => {
      this.endHold(due.endpointId);
      const n = this.news.get(due.endpointId);
      if (n?.starting) n.freedMeanwhile = true;
      else this.route(due);
    });
    this.forgetOld = setInterval(() => this.forgetOldSignals(), 10 * this.signalEveryMs);
    this.forgetOld.unref();
  }

  /** `heard`: news from the due channel; `found`: due work this worker found itself (which it never leaves to another). */
  route(due: DueEndpoint, how: 'heard' | 'found' = 'found'): void {
    if (this.o.sessions.poke(due.endpointId)) return;
    // Its workflow was signalled moments ago (it was no endpoint for a direct session): the same again, coalesced.
    if (this.o.direct && !this.signalledRecently(due.endpointId)) this.startDirect(due, how);
    else this.wake(due);
  }

  async close(): Promise<void> {
    clearInterval(this.forgetOld);
    for (const n of this.news.values()) {
      clearTimeout(n.trailing);
      clearTimeout(n.held?.timer);
    }
    this.news.clear();
    await this.o.direct?.close();
    await this.signals.flush();
  }

  private entry(endpointId: string): EndpointNews {
    let n = this.news.get(endpointId);
    if (!n) this.news.set(endpointId, (n = {}));
    return n;
  }

  /** Drops an entry left with nothing in it. */
  private tidy(endpointId: string): void {
    const n = this.news.get(endpointId);
    if (n && n.signalledAt === undefined && !n.trailing && !n.starting && !n.held) this.news.delete(endpointId);
  }

  private signalledRecently(endpointId: string): boolean {
    const at = this.news.get(endpointId)?.signalledAt;
    return at !== undefined && Date.now() - at < this.signalEveryMs;
  }

  /** To the workflow: signalled now, or once the interval since the last signal ends. */
  private wake(due: DueEndpoint): void {
    const n = this.entry(due.endpointId);
    const now = Date.now();
    if (n.signalledAt === undefined || now - n.signalledAt >= this.signalEveryMs) {
      n.signalledAt = now;
      traceHop('wake-signal', due.endpointId);
      this.signals.add(due.endpointId, due.accountId);
      return;
    }
    n.trailing ??= setTimeout(
      () => {
        n.trailing = undefined;
        n.signalledAt = undefined;
        this.tidy(due.endpointId);
        this.route(due);
      },
      n.signalledAt + this.signalEveryMs - now,
    );
  }

  private startDirect(due: DueEndpoint, how: 'heard' | 'found'): void {
    const n = this.entry(due.endpointId);
    if (n.starting || this.heldElsewhere(n, due.endpointId)) return;
    traceHop('lease-asked', due.endpointId);
    n.starting = true;
    this.o.direct!.start(due, how).then(
      (r) => {
        const freed = this.startAnswered(due.endpointId);
        if (r.kind === 'workflow') this.wake(due);
        else if (r.kind === 'busy' && freed) this.route(due);
        else if (r.kind === 'busy') this.hold(due, r.inMs, r.elsewhere);
      },
      (err) => {
        this.startAnswered(due.endpointId);
        logger.warn({ err, endpointId: due.endpointId }, 'direct session not started; its workflow is woken instead');
        this.wake(due);
      },
    );
  }

  /** The start in flight answered; true when a lease was given back here with work due meanwhile. */
  private startAnswered(endpointId: string): boolean {
    const n = this.news.get(endpointId);
    if (!n) return false;
    const freed = n.freedMeanwhile === true;
    n.starting = undefined;
    n.freedMeanwhile = undefined;
    this.tidy(endpointId);
    return freed;
  }

  /** Held by another session: looked at again once its lease would lapse. */
  private hold(due: DueEndpoint, inMs: number, elsewhere: boolean): void {
    const n = this.entry(due.endpointId);
    if (n.held) return;
    const again = () => {
      this.endHold(due.endpointId);
      this.route(due);
    };
    n.held = { timer: setTimeout(again, Math.max(50, inMs + 50)), elsewhere, lastNewsAt: Date.now() };
  }

  /**
   * Held by another worker's session that hears this news too: true, unless the news before it
   * came `heldQuietMs` ago. Then that session has likely ended, and the hold (up to its lease's 10 s)
   * is forgotten: kept, the preferred worker left every next session of a sparse endpoint (an
   * event every 7 s) to the other worker, which asks 100 ms late (the bench's sparse p99).
   */
  private heldElsewhere(n: EndpointNews, endpointId: string): boolean {
    if (!n.held?.elsewhere) return false;
    const now = Date.now();
    const quiet = now - n.held.lastNewsAt >= this.heldQuietMs;
    n.held.lastNewsAt = now;
    if (quiet) this.endHold(endpointId);
    return !quiet;
  }

  private endHold(endpointId: string): void {
    const n = this.news.get(endpointId);
    if (!n?.held) return;
    clearTimeout(n.held.timer);
    n.held = undefined;
    this.tidy(endpointId);
  }

  /** A session opened here: the wake pacing and the hold are over (a start in flight answers on its own). */
  private forget(endpointId: string): void {
    const n = this.news.get(endpointId);
    if (!n) return;
    clearTimeout(n.trailing);
    clearTimeout(n.held?.timer);
    n.signalledAt = n.trailing = n.held = undefined;
    this.tidy(endpointId);
  }

  private forgetOldSignals(): void {
    const now = Date.now();
    for (const [endpointId, n] of this.news)
      if (n.signalledAt !== undefined && now - n.signalledAt >= this.signalEveryMs) {
        n.signalledAt = undefined;
        this.tidy(endpointId);
      }
  }
}

export function startDueRouter(o: DueRouterOptions): DueRouter {
  const router = new NewsRouter(o);
  const route = (due: DueEndpoint) => router.route(due);
  let closed = false;
  let sweepTimer: NodeJS.Timeout | undefined;

  async function sweep(olderThanMs = o.sweepEveryMs): Promise<void> {
    if (o.sweepEveryMs === 0) return;
    try {
      for (const due of await findOverdueEndpoints(o.db, olderThanMs)) route(due);
    } catch (err) {
      logger.warn({ err }, 'sweep for overdue deliveries failed; the next one tries again');
    }
  }

  const listener = keepListening({
    databaseUrl: o.databaseUrl,
    channel: o.channel,
    what: 'due deliveries',
    onNotification: (payload) => {
      for (const due of parseDuePayload(payload)) {
        traceHop('heard', due.endpointId);
        router.route(due, 'heard');
      }
    },
    // Notifications sent while nobody listened are gone: look for their work.
    onUp: () => {
      o.preference?.listening(true);
      return sweep();
    },
    onDown: () => o.preference?.listening(false),
  });
  o.preference?.onPreferred(() => void sweep(0));
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
      await router.close();
    },
  };
}
