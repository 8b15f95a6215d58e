/**
 * A delivery session: the POSTs of one endpoint, `concurrency` at a time, for as long as work
 * keeps coming. Lanes take the next due delivery as soon as they are free (no round waits for
 * its slowest POST), claims and records go to Postgres in batches, and news of due work reaches
 * the session directly (a poke from the worker's listener), so a busy endpoint costs its
 * workflow one activity per session instead of a signal, a workflow task and an activity per
 * round.
 *
 * POSTs start no faster than the endpoint's `rate_limit` (src/core/pacer.ts), read before each POST;
 * waiting for it is no failure.
 *
 * It ends at the first failure (health is the workflow's to judge), when the endpoint stops
 * sending, after `limit` POSTs, when nothing has been due for `lingerMs`, after `maxSessionMs`,
 * or when cancelled; what it claimed and did not send is released.
 */
import type { DeliveryRound } from '../workflows/endpoint-contract.js';
import { getEventDefinition } from '../core/catalog/index.js';
import { compactOutcomes, sends, type AttemptOutcome } from '../core/health.js';
import { SLOW_POST_MS } from '../core/fair-share.js';
import { paceWaitMs } from '../core/pacer.js';
import { LEASE_MS } from '../core/runtime-limits.js';
import { retryDelayMs } from '../core/retry-curve.js';
import {
  claimWithEndpoint,
  closeForDeletedEvent,
  nextDueAtFor,
  releaseLeases,
  reportSession,
  type SessionReport,
  type ClaimedDelivery,
  type ClaimedWithEndpoint,
  type ClaimRequest,
} from '../db/deliveries.js';
import { getEndpointById, recordEndpointSuccesses, type EndpointRow, type SuccessShown } from '../db/endpoints.js';
import type { Db } from '../db/pool.js';
import type { HttpClient, Slot } from './http-client.js';
import { originOf } from './origin-slots.js';
import { claimedEventBody, sendToEndpoint, webhookTimestampOf } from './send-webhook.js';
import { traceHop, tracing } from '../runtime/hop-trace.js';
import { logger } from '../runtime/logger.js';
import type { BatchedCall } from '../runtime/statement-batcher.js';
import { originShareWaits, webhookSends } from '../runtime/metrics.js';
import { rememberingOpener, type SecretBox } from '../security/secret-box.js';
import type { AttemptRecorder } from './attempt-recorder.js';
import { DeliveryClaims } from './delivery-claims.js';
import type { HeldSession, SessionLeases } from './session-leases.js';
import { directEligible } from '../db/session-leases.js';
import type { Session, SessionRegistry } from './session-registry.js';
import { SessionStopping } from './session-stopping.js';
import { merged } from '../core/merged.js';

export interface SessionDeps {
  db: Db;
  secretBox: SecretBox;
  httpClient: HttpClient;
  sessions: SessionRegistry;
  /** The worker's recorder, shared by its sessions so that their records go in the same statements. */
  recorder: AttemptRecorder;
  concurrency: number;
  lingerMs: number;
  maxSessionMs: number;
  /**
   * When the last POST to each throttled endpoint started (performance.now()), kept by the worker
   * across its sessions so that a new session keeps the pace of the one before; per session when unset.
   */
  pacing?: Map<string, number>;
  /** The worker's reads of endpoints, shared by its sessions (one statement for many); one read per call when unset. */
  readEndpoint?: BatchedCall<string, EndpointRow | undefined>;
  /** The worker's claims, shared by its sessions likewise; one statement per claim when unset. */
  claim?: BatchedCall<ClaimRequest, ClaimedWithEndpoint>;
  /** The worker's reads of when an endpoint's next delivery comes due, shared by its waiting sessions likewise. */
  nextDue?: BatchedCall<string, Date | null>;
  /** The endpoints' session leases (one session per endpoint across workers); none when unset. */
  leases?: SessionLeases;
  /** This worker runs direct sessions (src/delivery/direct-sessions.ts): a workflow's session of a healthy endpoint does not linger. */
  directSessions?: boolean;
  /** The worker's displays of the latest success, shared by its sessions (`showSuccesses`); one statement each when unset. */
  showSuccess?: (shown: SuccessShown) => void;
}

export interface SessionRequest {
  endpointId: string;
  /** Whose leases these are: a retry of the same activity releases them. */
  owner: string;
  /** The scheduler's clock (the workflow's time, running on). */
  clock: () => number;
  /** The workflow's time when it asked for the session, which its record of health is as of (its start by `clock` when unset). */
  observedAtMs?: number;
  limit: number;
  signal: AbortSignal;
  /** A direct session (started by the due router, no workflow task) has taken its lease already, reading this endpoint. */
  leased?: EndpointRow;
  /** With `leased`: how long ago the last POST of the endpoint's sessions started, as the lease read it (`LeaseAnswer`). */
  lastPostAgoMs?: number | null;
}

/** The latest success shows on the endpoint at most this often while a session runs. */
const SHOW_SUCCESS_EVERY_MS = 1_000;
/** A lane waiting for the throttle re-reads the endpoint at least this often, so a PATCH of rate_limit applies at once. */
const PACE_RECHECK_MS = 1_000;

/**
 * The endpoint as committed now, read before each POST so a PATCH (secret, url, Authorization,
 * deactivation) applies to every attempt that starts after it. POSTs that start while a read is
 * in flight share it: one primary-key read per round trip, not per POST. A POST that starts
 * as soon as the claim that took its delivery returns uses the endpoint read by that claim
 * statement instead (`DeliveryClaims.next`): as recent as a read of its own would be.
 */
function currentEndpoint(
  read: (id: string) => Promise<EndpointRow | undefined>,
  endpointId: string,
): () => Promise<EndpointRow | undefined> {
  let reading: Promise<EndpointRow | undefined> | null = null;
  return () =>
    (reading ??= read(endpointId).finally(() => {
      reading = null;
    }));
}

/** The session's use of the leases: the worker's (`SessionLeases`), or none. */
interface LeasesPart {
  leaseMs?: number;
  /** Granted with the endpoint as committed now and its sessions' last POST, or with none to read (no leases). */
  take(
    endpointId: string,
    owner: string,
    kind: 'workflow',
  ): Promise<{ granted: true; endpoint?: EndpointRow; lastPostAgoMs?: number | null } | { granted: false }>;
  hold: SessionLeases['hold'];
  end: SessionLeases['end'];
  /** A direct session's report and lease's end in one statement; none without leases. */
  endDirect?: SessionLeases['endDirect'];
}

/** A session's parts, each settled once: the worker's shared ones, or a session's own (tests, a worker without them). */
type SessionParts = Required<Omit<SessionDeps, 'leases'>> & { leases: LeasesPart };

/** Without session leases (no direct sessions): every take granted, nothing held or given back. */
const NO_LEASES: LeasesPart = {
  take: async () => ({ granted: true }),
  hold: () => ({ claims: undefined, current: () => true, release() {} }),
  end: async () => {},
};

function sessionParts(deps: SessionDeps): SessionParts {
  const { db } = deps;
  // Named before it is returned: as a return value, its types would be inferred from SessionParts, not from `deps`.
  const parts = merged(deps, {
    pacing: deps.pacing ?? new Map<string, number>(),
    readEndpoint: deps.readEndpoint ?? ((id) => getEndpointById(db, id)),
    claim: deps.claim ?? (async (r) => claimWithEndpoint(db, r.endpointId, r.now, r.limit, r.leaseMs ?? LEASE_MS, r.owner)),
    nextDue: deps.nextDue ?? (async (id) => (await nextDueAtFor(db, [id]))[0] ?? null),
    leases: deps.leases ?? NO_LEASES,
    directSessions: deps.directSessions ?? false,
    showSuccess:
      deps.showSuccess ??
      ((shown) =>
        void recordEndpointSuccesses(db, [shown]).catch((err) =>
          logger.warn({ err, endpointId: shown.id }, 'latest success not shown on the endpoint'),
        )),
  });
  return parts;
}

/** A lane that waited less than this for its share of an origin signs with the endpoint it read before. */
const FRESH_AFTER_WAIT_MS = SLOW_POST_MS;

const sending = (e: EndpointRow | undefined): e is EndpointRow => !!e && !e.deleted_at && sends(e.active, e.health_status);

const nothingDone = (): DeliveryRound => ({ outcomes: [], more: false, nextDueAtMs: null, posts: 0 });

/** What a session did, before its report: the round without what its end's statement reads. */
interface SessionFacts {
  outcomes: AttemptOutcome[];
  more: boolean;
  posts: number;
  /** The time its records of health are as of: a verification after it wins. */
  observedAtMs: number;
}

/**
 * A session of successes only leaves a healthy endpoint's health as it was: it records the latest
 * success itself, in its report's statement, instead of its workflow scheduling `recordHealth` (an
 * activity and a workflow task more per wake-up). The latest is taken as `afterRound` takes it.
 */
function healthyOf(outcomes: AttemptOutcome[]): { lastSuccessAt: Date; lastResponseCode: number | null } | null {
  if (outcomes.length === 0 || !outcomes.every((o) => o.ok)) return null;
  const last = outcomes.reduce((a, b) => (b.atMs >= a.atMs ? b : a));
  return { lastSuccessAt: new Date(last.atMs), lastResponseCode: last.responseCode };
}

/** The workflow must apply the round (a failure, or successes the session could not record itself): it is handed over. */
export const needsWorkflow = (round: DeliveryRound): boolean => round.outcomes.length > 0 && round.healthRecorded !== true;

export async function runDeliverySession(given: SessionDeps, req: SessionRequest): Promise<DeliveryRound> {
  const deps = sessionParts(given);
  const readEndpoint = currentEndpoint(deps.readEndpoint, req.endpointId);
  const { leases } = deps;
  let opened = req.leased;
  let lastPostAgoMs = req.lastPostAgoMs;
  if (!opened) {
    const lease = await leases.take(req.endpointId, req.owner, 'workflow');
    // A direct session runs (it does the work, and looks again when it ends), or a round handed over
    // by one waits for this workflow: an empty round, and the workflow takes that round in next.
    if (!lease.granted) return nothingDone();
    opened = lease.endpoint;
    lastPostAgoMs = lease.lastPostAgoMs;
  }
  keepPace(deps.pacing, req.endpointId, lastPostAgoMs);
  // A PATCH (deactivation, new url) may be committed before its signal reaches the workflow.
  if (!sending(opened ?? (await readEndpoint()))) {
    await leases.end(req.endpointId, req.owner, { handover: false, tellIfDue: false });
    return nothingDone();
  }
  // A healthy endpoint's news is for direct sessions, which start on the deployment's preferred
  // worker: its workflow's session sends what is due and ends instead of lingering. Lingering, the
  // session of a new endpoint's first pass (on whichever worker Temporal gave it) took the news of
  // its first events and kept the endpoint there while they came: a hundred endpoints split
  // between two workers, each claiming and recording in half-size statements.
  const lingerMs = !req.leased && deps.directSessions && opened && directEligible(opened) ? 0 : deps.lingerMs;
  // Opened in the same tick as a direct session's call: news from now on pokes it.
  const news = deps.sessions.open(req.endpointId);
  const held = leases.hold({ endpointId: req.endpointId, owner: req.owner }, !!req.leased);
  let facts: SessionFacts | undefined;
  try {
    facts = await new DeliverySession(merged(deps, { lingerMs }), req, readEndpoint, news, held).run();
  } finally {
    news.close();
    held.release();
    // One that threw gives its lease back at once: its activity's retry (same owner) waits while it is held.
    if (!facts) await giveBack(leases, req);
  }
  return endSession(deps, req, facts);
}

/** Gives the lease back as a session that did nothing the workflow must take in; failing, it lapses. */
const giveBack = (leases: LeasesPart, req: SessionRequest): Promise<void> =>
  leases.end(req.endpointId, req.owner, { handover: false, tellIfDue: false }).catch(() => {});

/** `work`'s answer; when it fails, the lease is given back first. */
async function orGiveBack<T>(leases: LeasesPart, req: SessionRequest, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    await giveBack(leases, req);
    throw err;
  }
}

/**
 * The session's report (`reportSession`) and its lease given back: a direct session's in one
 * statement (`SessionLeases.endDirect`), handed over to the workflow when it had outcomes it did
 * not record; a workflow's session loops on its own when it may have work left, and any other
 * looks for news it missed.
 */
async function endSession(deps: SessionParts, req: SessionRequest, facts: SessionFacts): Promise<DeliveryRound> {
  const { leases } = deps;
  const lastStart = deps.pacing.get(req.endpointId);
  const lastPostAgoMs = lastStart === undefined ? null : performance.now() - lastStart;
  const healthy = healthyOf(facts.outcomes);
  const observedAt = new Date(facts.observedAtMs);
  const roundOf = (r: SessionReport): DeliveryRound => ({
    outcomes: facts.outcomes,
    more: facts.more,
    nextDueAtMs: r.nextDueAt?.getTime() ?? null,
    posts: facts.posts,
    owed: r.owed,
    healthRecorded: r.healthRecorded,
  });
  if (req.leased && leases.endDirect) {
    const hadOutcomes = facts.outcomes.length > 0;
    return roundOf(
      await orGiveBack(leases, req, leases.endDirect(req.endpointId, req.owner, { healthy, hadOutcomes, observedAt, lastPostAgoMs })),
    );
  }
  const round = roundOf(await orGiveBack(leases, req, reportSession(deps.db, req.endpointId, healthy, observedAt)));
  const handover = needsWorkflow(round);
  await leases.end(req.endpointId, req.owner, { handover, tellIfDue: !handover && (!!req.leased || !round.more), lastPostAgoMs });
  return round;
}

/**
 * Takes in the pace of the endpoint's sessions kept with its lease: the last POST started
 * `lastPostAgoMs` ago, on this worker or another (a session moved between workers keeps its
 * pacing window, no POST too many). This worker's own record stands when it is the later one.
 */
function keepPace(pacing: Map<string, number>, endpointId: string, lastPostAgoMs: number | null | undefined): void {
  if (lastPostAgoMs === null || lastPostAgoMs === undefined) return;
  const kept = performance.now() - Math.max(0, lastPostAgoMs);
  const here = pacing.get(endpointId);
  if (here === undefined || here < kept) pacing.set(endpointId, kept);
}

/**
 * One session's sending side: `concurrency` lanes, each taking the next claimed delivery, waiting
 * for the throttle, POSTing it to the endpoint as committed now and recording the attempt. It
 * owns what the session reports (outcomes, POSTs made); its claims (`DeliveryClaims`) own the
 * leases, and `SessionStopping` says why it ended.
 */
class DeliverySession {
  private readonly stopping: SessionStopping;
  private readonly claims: DeliveryClaims;
  private outcomes: AttemptOutcome[] = [];
  /** Deliveries taken to the end: POSTed, or closed because their event is gone. */
  private done = 0;
  private lastRecord: Promise<void> = Promise.resolve();
  private lastShownAt = 0;
  /** The endpoint's secrets, decrypted once per ciphertext instead of once per POST. */
  private readonly secrets: Pick<SecretBox, 'open'>;
  private readonly observedAtMs: number;

  constructor(
    private readonly deps: SessionParts,
    private readonly req: SessionRequest,
    private readonly readEndpoint: () => Promise<EndpointRow | undefined>,
    news: Session,
    /** The session's lease, which the worker renews with the deliveries claimed under a short lease (a direct session's `claims`). */
    private readonly held: HeldSession,
  ) {
    this.stopping = new SessionStopping(news);
    this.claims = new DeliveryClaims(
      // A direct session's lease is given back telling what is due (runDeliverySession's end).
      merged(merged(deps, req), { leased: held.claims, shortLeaseMs: deps.leases.leaseMs, leaseEndRoutesDue: !!req.leased }),
      news,
      this.stopping,
    );
    this.secrets = rememberingOpener(deps.secretBox);
    this.observedAtMs = req.observedAtMs ?? req.clock();
  }

  async run(): Promise<SessionFacts> {
    const onAbort = () => this.stopping.halt('cancelled');
    this.req.signal.addEventListener('abort', onAbort);
    // Lanes waiting for a share of a busy origin never ask for more work, where the time is
    // checked; at the session's end they stop waiting and their deliveries are released.
    const timeUp = setTimeout(() => this.stopping.halt('time'), this.deps.maxSessionMs);
    try {
      const lanes = await Promise.allSettled(Array.from({ length: this.deps.concurrency }, () => this.lane()));
      const failed = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
      // Records land before leases are given back: a released delivery is never one already sent.
      await this.lastRecord;
      await this.claims.settled();
      if (this.claims.claimed > this.done) await releaseLeases(this.deps.db, this.req.owner);
      if (failed) throw failed.reason;
      return this.facts();
    } finally {
      clearTimeout(timeUp);
      this.req.signal.removeEventListener('abort', onAbort);
    }
  }

  /** What the session did; `more` when it ended with work possibly left due. Its report is its end's (`endSession`). */
  private facts(): SessionFacts {
    const stop = this.stopping.reason;
    const more =
      stop === 'time' || stop === 'cancelled' || stop === 'lease_lost' || (stop === null && this.claims.claimed >= this.req.limit);
    return { outcomes: this.outcomes, more, posts: this.done, observedAtMs: this.observedAtMs };
  }

  private async lane(): Promise<void> {
    for (;;) {
      const taken = await this.claims.next();
      if (!taken) return;
      const d = taken.delivery;
      traceHop('claimed', d.idempotency_key);
      const { endpoint, slot } = await this.readyToPost(taken.endpoint);
      // Its lease not surely its own (lapsed, or renewals stalled): another session may hold these deliveries now.
      if (slot && !this.held.current()) this.stopping.halt('lease_lost');
      // Cut short meanwhile: this delivery stays leased to the session and is released at its end.
      if (this.stopping.cutShort) return slot?.release();
      if (!sending(endpoint)) return this.stopping.halt('not_sending');
      try {
        const outcome = await this.attempt(endpoint, d, slot!);
        this.done++;
        // Its record, on its way, ends the lease.
        this.held.claims?.delete(d.id);
        if (!outcome) continue;
        this.outcomes = compactOutcomes([...this.outcomes, outcome]);
        if (!outcome.ok) this.stopping.halt('failure');
        else this.showSuccess(outcome);
      } catch (err) {
        logger.error({ err, deliveryId: d.id }, 'delivery attempt failed before its POST; its lease brings it back');
      } finally {
        slot!.release();
      }
    }
  }

  /**
   * The endpoint as committed now, with its throttle passed and a share of its origin's
   * connections held (src/delivery/origin-slots.ts), or without a slot when the session was cut short or
   * the endpoint no longer sends; `justRead` is the endpoint the claim this lane waited for read
   * moments ago. The share is taken after the throttle, so a throttled lane holds no connection
   * slot while it waits for its pace; when the share was not free at once, the
   * endpoint is read and paced again while holding it: a PATCH committed during the wait applies
   * to this POST, and two lanes that waited together do not start at once past the throttle.
   */
  private async readyToPost(justRead?: EndpointRow): Promise<{ endpoint: EndpointRow | undefined; slot?: Slot }> {
    let endpoint = await this.pacedEndpoint(justRead);
    for (;;) {
      if (this.stopping.cutShort || !sending(endpoint)) return { endpoint };
      const slot = await this.deps.httpClient.slot(this.req.endpointId, endpoint.url, this.stopping.signal);
      if (!slot) return { endpoint };
      if (!slot.waited) return { endpoint, slot };
      originShareWaits.observe(slot.waitedMs / 1000);
      try {
        // A wait shorter than a slow POST leaves the endpoint as fresh as a POST already in flight.
        endpoint = await this.pacedEndpoint(slot.waitedMs < FRESH_AFTER_WAIT_MS ? endpoint : undefined);
      } catch (err) {
        slot.release();
        throw err;
      }
      if (!this.stopping.cutShort && sending(endpoint) && originOf(endpoint.url) === slot.origin) return { endpoint, slot };
      // Cut short, no longer sending, or moved to another origin (a PATCH of its url) meanwhile.
      slot.release();
    }
  }

  /**
   * The endpoint as committed now, once its throttle (`rate_limit`) lets a POST start: `justRead`
   * or read again. Waiting is not a failure and is recorded nowhere. The start is taken with no
   * await between the check and the claim of the slot, so two lanes never share one.
   */
  private async pacedEndpoint(justRead?: EndpointRow): Promise<EndpointRow | undefined> {
    const { endpointId } = this.req;
    for (let read = justRead; ; read = undefined) {
      const endpoint = read ?? (await this.readEndpoint());
      if (this.stopping.cutShort || !sending(endpoint)) return endpoint;
      const now = performance.now();
      const wait = paceWaitMs(this.deps.pacing.get(endpointId), now, endpoint.rate_limit);
      if (wait === 0) {
        if (endpoint.rate_limit === null) this.deps.pacing.delete(endpointId);
        else this.deps.pacing.set(endpointId, now);
        return endpoint;
      }
      await this.stopping.pause(Math.min(wait, PACE_RECHECK_MS));
    }
  }

  /** POSTs one claimed delivery to the endpoint as it is now; null when nothing was sent (its event is gone). */
  private async attempt(endpoint: EndpointRow, d: ClaimedDelivery, slot: Slot): Promise<AttemptOutcome | null> {
    const event = d.event;
    const def = getEventDefinition(d.event_type);
    if (!event || !def) {
      await closeForDeletedEvent(this.deps.db, d.id);
      return null;
    }
    const body = claimedEventBody(def, event);
    const startedAtMs = this.req.clock();
    traceHop('post', d.idempotency_key);
    const outcome = await sendToEndpoint(this.deps.httpClient, this.secrets, endpoint, {
      eventType: d.event_type,
      idempotencyKey: d.idempotency_key,
      webhookId: d.id,
      body,
      // The attempt's recorded start: GET /webhook_deliveries/{id} shows the same headers again.
      timestampSeconds: webhookTimestampOf(startedAtMs),
      slot,
    });
    webhookSends.inc({ kind: 'delivery', outcome: outcome.acknowledged ? 'success' : (outcome.error ?? 'failure') });
    const number = d.attempts + 1;
    this.lastRecord = this.deps.recorder.add({
      id: d.id,
      createdAt: d.created_at,
      number,
      attempt: {
        startedAt: new Date(startedAtMs),
        durationMs: outcome.durationMs,
        responseCode: outcome.recordedStatus,
        error: outcome.error,
        responseExcerpt: outcome.excerpt,
      },
      success: outcome.acknowledged,
      nextAttemptAt: outcome.acknowledged ? null : new Date(startedAtMs + retryDelayMs(number)),
    });
    if (tracing) void this.lastRecord.then(() => traceHop('recorded', d.idempotency_key));
    return { ok: outcome.acknowledged, responseCode: outcome.recordedStatus, atMs: startedAtMs + outcome.durationMs, error: outcome.error };
  }

  private showSuccess(outcome: AttemptOutcome): void {
    if (outcome.atMs - this.lastShownAt < SHOW_SUCCESS_EVERY_MS) return;
    this.lastShownAt = outcome.atMs;
    const { endpointId } = this.req;
    this.deps.showSuccess({ id: endpointId, at: new Date(outcome.atMs), responseCode: outcome.responseCode });
  }
}
