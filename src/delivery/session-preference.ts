/**
 * Which of a deployment's workers starts new direct sessions first. Every worker hears every
 * piece of news and asks for the endpoint's session lease, and the first to ask gets it: two
 * workers racing split a hundred endpoints between them, and each then claims, records and wakes
 * for half-size batches. On two cores, a hundred endpoints cost 1.98 ms of machine CPU per
 * delivery split over two workers against 1.47 ms in one (`npm run bench -- --peer`, one run
 * with `--worker-processes=1`); gathered, the other worker's share fell from 0.22–0.42 ms per
 * delivery to 0.03–0.08.
 *
 * So one worker, the holder of the deployment's advisory lock (on a connection of its own, which
 * Postgres releases when the worker dies), asks at once; the others ask `deferMs` later, and so
 * start a session only when it did not: it is gone, not listening, or it used more than
 * `busyShare` of a core in each of the last two seconds with another worker there to take over
 * (then it defers too, and the sessions spread; one busy second is a burst, such as a hundred
 * sessions starting). A hint on timing only: the lease still decides who runs a session, and
 * each endpoint has one.
 *
 * The others hear the same news, and an ask the preferred worker has already answered is refused:
 * for a sparse endpoint (every session a new one) that cost each of them a lease statement and
 * about 1.7 ms of CPU a delivery. So a worker that is not preferred leaves news to the preferred
 * one while it sees that worker holding the preference, not stepping aside (a flag the holder
 * raises while it defers, or while it does not listen) and not stalled (its lock's connection
 * quiet for three of its looks, which run every `retryMs`), as of its own last look. What the
 * others find themselves (sweeps, sessions ending with work due, lost sessions) they still ask
 * for. News left to a holder that died is found by the sweep of the worker that takes over; a
 * stalled one hears it when it resumes (its notifications wait on its connection).
 */
import { performance } from 'node:perf_hooks';
import { BusySeconds } from '../core/busy-seconds.js';
import { keepTryingForLock } from '../db/advisory-lock.js';

export interface SessionPreference {
  /** How long this worker waits before asking for a new session's lease: 0 when it is preferred. */
  delayMs(): number;
  /** True when news is the preferred worker's to take: another worker holds the preference, does not step aside and is not stalled. */
  leavesNews(): boolean;
  /** Whether this worker hears news: one that does not steps aside while it holds the preference. */
  listening(up: boolean): void;
  /** `listener` runs each time this worker becomes the preferred one: news left to the one before may be waiting. */
  onPreferred(listener: () => void): void;
  /** Resolves once the first try for the lock is answered. */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Long enough for the preferred worker's ask to commit first on a loaded machine: at 20 ms, a
 * hundred endpoints' first news found it 40 ms behind in hearing them, and a third went elsewhere.
 */
const DEFER_MS = 100;
/** The share of a core, two seconds running, past which the preferred worker lets others go first. */
const BUSY_SHARE = 0.9;
/** How often a worker without the lock tries for it, and every worker counts the others. */
const RETRY_MS = 2_000;

export function startSessionPreference(o: {
  databaseUrl: string;
  /** The deployment's due channel: deployments sharing a database each prefer a worker of their own. */
  channel: string;
  deferMs?: number;
  busyShare?: number;
  retryMs?: number;
  /** False: never leave news to the preferred worker (without the due sweep nothing would find news left to one that died). */
  leaveNews?: boolean;
}): SessionPreference {
  const deferMs = o.deferMs ?? DEFER_MS;
  const busyShare = o.busyShare ?? BUSY_SHARE;
  const retryMs = o.retryMs ?? RETRY_MS;
  const preferred: (() => void)[] = [];
  const lock = keepTryingForLock({
    databaseUrl: o.databaseUrl,
    name: `session-preference ${o.channel}`,
    retryMs,
    onTaken: () => preferred.forEach((listener) => listener()),
  });
  // Its CPU, not its event loop's busy time: on a shared machine a loop waiting for a core looks busy
  // without the worker needing a core more.
  const load = new BusySeconds(busyShare);
  let hearing = true;
  // A busy holder steps aside only for another worker: alone, its deferring would only delay.
  const defers = () => load.busy && lock.members() > 1;
  const showAside = () => lock.flag(defers() || !hearing);
  let last = { cpu: process.cpuUsage(), at: performance.now() };
  const sampler = setInterval(() => {
    const now = { cpu: process.cpuUsage(), at: performance.now() };
    load.sample((now.cpu.user - last.cpu.user + now.cpu.system - last.cpu.system) / 1000, now.at - last.at);
    last = now;
    showAside();
  }, 1_000);
  sampler.unref();
  return {
    delayMs: () => (lock.held() && !defers() ? 0 : deferMs),
    leavesNews: () => {
      const holder = o.leaveNews !== false && !lock.held() ? lock.otherHolder() : null;
      // A holder whose lock's connection went quiet for three looks is stalled, not only slow.
      return holder !== null && !holder.flagged && holder.quietMs < 3 * retryMs;
    },
    listening(up) {
      hearing = up;
      showAside();
    },
    onPreferred: (listener) => void preferred.push(listener),
    ready: lock.ready,
    async close() {
      clearInterval(sampler);
      await lock.close();
    },
  };
}
