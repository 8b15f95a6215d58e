/**
 * The claiming side of a delivery session: it leases the next due deliveries from Postgres in
 * batches and hands them to the lanes one by one. While none is due it waits for news of work (a
 * poke from the worker's listener), for the next retry time, or for the end of the linger; then,
 * before the session ends idle, it refuses pokes (news goes to the workflow again) and looks
 * once more, so that nothing arriving meanwhile is missed (or, for a session whose lease's end
 * routes what is due, leaves that to it).
 */
import { LEASE_MS } from '../core/runtime-limits.js';
import type { ClaimedDelivery, ClaimedWithEndpoint, ClaimRequest } from '../db/deliveries.js';
import type { EndpointRow } from '../db/endpoints.js';
import { logger } from '../runtime/logger.js';
import type { BatchedCall } from '../runtime/statement-batcher.js';
import type { Session } from './session-registry.js';
import type { SessionStopping } from './session-stopping.js';

export interface ClaimLimits {
  endpointId: string;
  /** Whose leases these are: a retry of the same activity releases them. */
  owner: string;
  /** The scheduler's clock (the workflow's time, running on). */
  clock: () => number;
  /** Deliveries claimed at most in the whole session. */
  limit: number;
  /** Lanes: a claim asks for twice as many, so that no lane waits for the next one. */
  concurrency: number;
  lingerMs: number;
  maxSessionMs: number;
  /** Claims: the worker's shared ones (one statement for many sessions), or one statement each. */
  claim: BatchedCall<ClaimRequest, ClaimedWithEndpoint>;
  /** When the endpoint's earliest delivery not yet due comes due: the worker's shared reads, or one statement each. */
  nextDue: BatchedCall<string, Date | null>;
  /** Ids of the deliveries claimed under a short lease that the worker renews (a direct session's). */
  leased?: Set<string>;
  /** That short lease, which its claims take from the start (LEASE_MS when unset). */
  shortLeaseMs?: number;
  /**
   * The session's lease, given back, answers whether work is due that nobody holds, and the worker
   * routes it at once (a direct session's: `SessionLeases.endDirect`). Then the session
   * neither reads when its next delivery comes due while it lingers (a retry due meanwhile waits
   * for the linger's end, or for news) nor makes a last look before it ends: a sparse endpoint's
   * every session made both, two statements of about ten a delivery, and found nothing.
   */
  leaseEndRoutesDue?: boolean;
}

/** A claimed delivery; with the endpoint the claim read when the lane waited for that claim, so its POST starts at once. */
export interface Taken {
  delivery: ClaimedDelivery;
  /** The endpoint as committed when the claim ran, moments ago; undefined when the delivery waited in the queue (read it again). */
  endpoint?: EndpointRow;
}

export class DeliveryClaims {
  private readonly queue: ClaimedDelivery[] = [];
  /** The endpoint read by the last claim. */
  private claimedEndpoint: EndpointRow | undefined;
  private claimedCount = 0;
  /** The last claim got fewer than it asked for: it took all that was due. */
  private drained = false;
  /** The claim under way, which every lane short of work waits on. */
  private filling: Promise<void> | null = null;
  /** When the earliest delivery not yet due comes due; undefined until looked up. */
  private nextDueMs: number | null | undefined;
  /** The lookup of `nextDueMs` under way. */
  private lookingUp: Promise<void> | null = null;
  private readonly startedAt = Date.now();
  private lastWorkAt = this.startedAt;

  constructor(
    private readonly limits: ClaimLimits,
    private readonly news: Session,
    private readonly stopping: SessionStopping,
  ) {}

  /** How many deliveries the session has leased. */
  get claimed(): number {
    return this.claimedCount;
  }

  /** The next claimed delivery; null once the session stops or has claimed its limit. */
  async next(): Promise<Taken | null> {
    // Set once this call waited for a claim: what the queue holds then is what that claim just took.
    let fresh = false;
    for (;;) {
      if (this.stopping.stopped) return null;
      const next = this.queue.shift();
      if (next) {
        this.topUp();
        return { delivery: next, endpoint: fresh ? this.claimedEndpoint : undefined };
      }
      if (this.claimedCount >= this.limits.limit) return null;
      this.filling ??= this.fill().finally(() => {
        this.filling = null;
      });
      try {
        await this.filling;
        fresh = true;
      } catch (err) {
        this.stopping.halt('error');
        throw err;
      }
    }
  }

  /** Resolves once no claim is under way: a claim that commits after the session released its leases would keep them. */
  async settled(): Promise<void> {
    await this.filling?.catch(() => {});
  }

  /**
   * With the queue down to one delivery per lane and more possibly due, claims the next batch
   * now, while the lanes still have work: under a backlog, lanes that found the queue empty all
   * waited for the claim's round trip (the tail of a busy endpoint, traced by `npm run bench --
   * --peer --trace`). After a claim that took all that was due, the next news does it instead.
   */
  private topUp(): void {
    const { concurrency, limit } = this.limits;
    if (this.filling || this.drained || this.stopping.stopped || this.queue.length > concurrency) return;
    const want = Math.min(concurrency * 2 - this.queue.length, limit - this.claimedCount);
    if (want <= 0) return;
    const filling = this.claim(want)
      .then(() => {})
      .finally(() => {
        this.filling = null;
      });
    // A lane that runs dry meanwhile waits on it and meets its error; with none, the next claim does.
    filling.catch((err) => logger.warn({ err, endpointId: this.limits.endpointId }, 'claim ahead failed; the next claim tries again'));
    this.filling = filling;
  }

  /** Claims the next due deliveries; while none is due, waits for work until the linger ends (then stops the session idle). */
  private async fill(): Promise<void> {
    let lastLook = false;
    // Until a poke (new work) or a retry time comes, asking again after a draining claim would only find nothing.
    let skipClaim = this.drained;
    while (!this.stopping.stopped) {
      if (Date.now() - this.startedAt >= this.limits.maxSessionMs) return this.stopping.halt('time');
      const want = Math.min(this.limits.concurrency * 2, this.limits.limit - this.claimedCount);
      if (want <= 0) return;
      if (!skipClaim) {
        if (await this.claim(want)) {
          if (lastLook) this.news.resume();
          return;
        }
        if (lastLook) return this.stopping.halt('idle');
      }
      skipClaim = false;
      const lingerLeft = this.lingerLeft();
      if (lingerLeft <= 0) {
        // From now on news of due work goes to the workflow; one more look catches what came before.
        this.news.ending();
        if (this.limits.leaseEndRoutesDue) return this.stopping.halt('idle');
        lastLook = true;
        continue;
      }
      // Only news or a retry's due time brings work to claim. A wait that ran to the linger's end
      // claims nothing, even when its timer woke a millisecond short of it (the loop waits out the
      // rest): it used to claim then, and once more for the last look (seen on a busy CI machine).
      skipClaim = (await this.waitForWork(lingerLeft)) === 'quiet';
    }
  }

  private lingerLeft(): number {
    return this.limits.lingerMs - (Date.now() - this.lastWorkAt);
  }

  /** Leases up to `want` due deliveries into the queue; false when none was due. */
  private async claim(want: number): Promise<boolean> {
    const { endpointId, clock, owner, claim } = this.limits;
    // The worker's shared claim serves many sessions in one statement, each with its endpoint
    // (a claim of deliveries alone leaves the lanes to read it).
    // A direct session's claims are leased short from the start (its worker renews them while it
    // lives): a worker killed before its first renewal must not keep them for LEASE_MS.
    const leaseMs = (this.limits.leased && this.limits.shortLeaseMs) || LEASE_MS;
    const got = await claim({ endpointId, now: new Date(clock()), limit: want, owner, leaseMs });
    const { deliveries: rows, endpoint } = got;
    this.drained = rows.length < want;
    if (rows.length === 0) return false;
    this.claimedEndpoint = endpoint;
    this.claimedCount += rows.length;
    for (const r of rows) this.limits.leased?.add(r.id);
    this.queue.push(...rows);
    this.lastWorkAt = Date.now();
    return true;
  }

  /**
   * Rows due later (earlier failures) come due on their own; new work comes with a poke, so the
   * session looks for nothing else until then: every path that makes work due notifies the workers
   * (a publish, a resend, a recovery; the workflow releases held work only while no session runs),
   * a notification lost with the listener's connection is found by the sweep that follows its
   * reconnect, and the last look before the session ends idle takes whatever came meanwhile. (It
   * looked once a second: five claims per wake-up for nothing, most of a lingering session's cost.)
   * 'news' when poked (or stopped), 'due' when a retry's due time came first, else 'quiet'.
   */
  private async waitForWork(lingerLeft: number): Promise<'news' | 'due' | 'quiet'> {
    const { clock } = this.limits;
    if (this.limits.leaseEndRoutesDue) return (await this.news.wait(lingerLeft)) ? 'news' : 'quiet';
    if (this.nextDueMs === undefined || (this.nextDueMs !== null && this.nextDueMs <= clock())) {
      // News is heard while the due time is looked up: at a start, a session's first lookups took
      // 40–80 ms (traced), and the backlog that news had announced waited for them.
      const lookup = this.lookUpNextDue();
      if (await this.news.wait(lingerLeft, lookup)) {
        lookup.catch((err) =>
          logger.warn({ err, endpointId: this.limits.endpointId }, 'next due time not read; read again at the next wait'),
        );
        return 'news';
      }
      await lookup;
      lingerLeft = this.lingerLeft();
      if (lingerLeft <= 0) return 'quiet';
    }
    const untilDue = this.nextDueMs == null ? Infinity : this.nextDueMs - clock();
    if (await this.news.wait(Math.max(1, Math.min(lingerLeft, untilDue)))) return 'news';
    return untilDue <= lingerLeft ? 'due' : 'quiet';
  }

  /** Reads `nextDueMs`; one read at a time. */
  private lookUpNextDue(): Promise<void> {
    const { endpointId, nextDue } = this.limits;
    return (this.lookingUp ??= nextDue(endpointId)
      .then((at) => {
        this.nextDueMs = at?.getTime() ?? null;
      })
      .finally(() => {
        this.lookingUp = null;
      }));
  }
}
