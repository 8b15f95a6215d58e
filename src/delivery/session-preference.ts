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
 */
import { performance } from 'node:perf_hooks';
import { BusySeconds } from '../core/busy-seconds.js';
import { keepTryingForLock } from '../db/advisory-lock.js';

export interface SessionPreference {
  /** How long this worker waits before asking for a new session's lease: 0 when it is preferred. */
  delayMs(): number;
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
}): SessionPreference {
  const deferMs = o.deferMs ?? DEFER_MS;
  const busyShare = o.busyShare ?? BUSY_SHARE;
  const lock = keepTryingForLock({ databaseUrl: o.databaseUrl, name: `session-preference ${o.channel}`, retryMs: o.retryMs ?? RETRY_MS });
  // Its CPU, not its event loop's busy time: on a shared machine a loop waiting for a core looks busy
  // without the worker needing a core more.
  const load = new BusySeconds(busyShare);
  let last = { cpu: process.cpuUsage(), at: performance.now() };
  const sampler = setInterval(() => {
    const now = { cpu: process.cpuUsage(), at: performance.now() };
    load.sample((now.cpu.user - last.cpu.user + now.cpu.system - last.cpu.system) / 1000, now.at - last.at);
    last = now;
  }, 1_000);
  sampler.unref();
  return {
    // A busy holder steps aside only for another worker: alone, its deferring would only delay.
    delayMs: () => (lock.held() && !(load.busy && lock.members() > 1) ? 0 : deferMs),
    ready: lock.ready,
    async close() {
      clearInterval(sampler);
      await lock.close();
    },
  };
}
