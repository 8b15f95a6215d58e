/**
 * A delivery session: the POSTs of one endpoint, `concurrency` at a time, for as long as work
 * keeps coming. Lanes take the next due delivery as soon as they are free (no round waits for
 * its slowest POST), claims and records go to Postgres in batches, and news of due work reaches
 * the session directly (a poke from the worker's listener), so a busy endpoint costs its
 * workflow one activity per session instead of a signal, a workflow task and an activity per
 * round.
 *
 * POSTs start no faster than the endpoint's `rate_limit` (core/pacer.ts), read before each POST;
 * waiting for it is no failure.
 *
 * It ends at the first failure (health is the workflow's to judge), when the endpoint stops
 * sending, after `limit` POSTs, when nothing has been due for `lingerMs`, after `maxSessionMs`,
 * or when cancelled; what it claimed and did not send is released.
 */
import { getEventDefinition } from '../core/catalog/index.js';
import { compactOutcomes, sends, type AttemptOutcome } from '../core/health.js';
import { paceWaitMs } from '../core/pacer.js';
import { retryDelayMs } from '../core/retry-curve.js';
import { LEASE_MS } from '../core/runtime-limits.js';
import { webhookBody } from '../core/webhook-body.js';
import { claimDueDeliveries, closeForDeletedEvent, countOwed, nextDueAt, releaseLeases, type ClaimedDelivery } from '../db/deliveries.js';
import { getEndpointById, recordEndpointSuccess, type EndpointRow } from '../db/endpoints.js';
import type { Db } from '../db/pool.js';
import type { HttpClient } from '../delivery/http-client.js';
import { sendToEndpoint } from '../delivery/send-webhook.js';
import { logger } from '../runtime/logger.js';
import { webhookSends } from '../runtime/metrics.js';
import type { SecretBox } from '../security/secret-box.js';
import type { AttemptRecorder } from './attempt-recorder.js';
import type { SessionRegistry } from './session-registry.js';

export interface DeliveryRound {
  /** What came of the POSTs, compacted to at most four with the same effect on health (`compactOutcomes`). */
  outcomes: AttemptOutcome[];
  /** The session ended with work possibly left due (its limit, its time, a cancellation): look again at once. */
  more: boolean;
  nextDueAtMs: number | null;
  /** How many POSTs were made (absent from rounds recorded before sessions, whose outcomes were all of them). */
  posts?: number;
  /** Deliveries still owed and not held when the session ended, for the workflow's story (absent from older rounds). */
  owed?: number;
}

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
}

export interface SessionRequest {
  endpointId: string;
  /** Whose leases these are: a retry of the same activity releases them. */
  owner: string;
  /** The scheduler's clock (the workflow's time, running on). */
  clock: () => number;
  limit: number;
  signal: AbortSignal;
}

/**
 * A lingering session looks for due work at least this often even without a poke: work made due
 * by a path that sends no notification (a wake signal to the workflow alone) waits at most this.
 */
const RECHECK_MS = 1_000;
/** The latest success shows on the endpoint at most this often while a session runs. */
const SHOW_SUCCESS_EVERY_MS = 1_000;
/** A lane waiting for the throttle re-reads the endpoint at least this often, so a PATCH of rate_limit applies at once. */
const PACE_RECHECK_MS = 1_000;

type Stop = 'failure' | 'not_sending' | 'idle' | 'time' | 'cancelled' | 'error';

/**
 * The endpoint as committed now, read before each POST so a PATCH (secret, url, Authorization,
 * deactivation) applies to every attempt that starts after it. POSTs that start while a read is
 * in flight share it: one primary-key read per round trip, not per POST.
 */
function currentEndpoint(db: Db, endpointId: string): () => Promise<EndpointRow | undefined> {
  let reading: Promise<EndpointRow | undefined> | null = null;
  return () =>
    (reading ??= getEndpointById(db, endpointId).finally(() => {
      reading = null;
    }));
}

const sending = (e: EndpointRow | undefined): e is EndpointRow => !!e && !e.deleted_at && sends(e.active, e.health_status);

export async function runDeliverySession(deps: SessionDeps, req: SessionRequest): Promise<DeliveryRound> {
  const { db } = deps;
  const readEndpoint = currentEndpoint(db, req.endpointId);
  // A PATCH (deactivation, new url) may be committed before its signal reaches the workflow.
  if (!sending(await readEndpoint())) return { outcomes: [], more: false, nextDueAtMs: null, posts: 0 };

  const session = deps.sessions.open(req.endpointId);
  let lastRecord: Promise<void> = Promise.resolve();
  const queue: ClaimedDelivery[] = [];
  const startedAt = Date.now();
  let lastWorkAt = startedAt;
  let lastShownAt = 0;
  let claimed = 0;
  let done = 0;
  let outcomes: AttemptOutcome[] = [];
  let stop: Stop | null = null;
  let filling: Promise<void> | null = null;
  let drained = false;
  /** When the earliest delivery not yet due comes due; undefined until looked up. */
  let nextDueMs: number | null | undefined;

  const pacing = deps.pacing ?? new Map<string, number>();
  /** Lanes waiting for the throttle; a stop ends their wait at once. */
  const pauses = new Set<() => void>();

  const halt = (reason: Stop) => {
    stop ??= reason;
    session.interrupt();
    for (const resume of [...pauses]) resume();
  };
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        pauses.delete(done);
        resolve();
      }
      pauses.add(done);
    });
  const onAbort = () => halt('cancelled');
  req.signal.addEventListener('abort', onAbort);

  /** Claims the next due deliveries; while none is due, waits for a poke, a retry time, or the linger's end. */
  async function fill(): Promise<void> {
    let lastLook = false;
    // A claim that got fewer than it asked for took all that was due: until a poke (new work) or a
    // retry time comes, asking again would only find nothing.
    let wait = drained;
    while (!stop) {
      if (Date.now() - startedAt >= deps.maxSessionMs) return halt('time');
      const want = Math.min(deps.concurrency * 2, req.limit - claimed);
      if (want <= 0) return;
      if (!wait) {
        const rows = await claimDueDeliveries(db, req.endpointId, new Date(req.clock()), want, LEASE_MS, req.owner);
        drained = rows.length < want;
        if (rows.length > 0) {
          claimed += rows.length;
          queue.push(...rows);
          lastWorkAt = Date.now();
          if (lastLook) session.resume();
          return;
        }
        if (lastLook) return halt('idle');
      }
      wait = false;
      const lingerLeft = deps.lingerMs - (Date.now() - lastWorkAt);
      if (lingerLeft <= 0) {
        // From now on news of due work goes to the workflow; one more look catches what came before.
        session.ending();
        lastLook = true;
        continue;
      }
      // Rows due later (earlier failures) come due on their own; new work comes with a poke.
      if (nextDueMs === undefined || (nextDueMs !== null && nextDueMs <= req.clock()))
        nextDueMs = (await nextDueAt(db, req.endpointId))?.getTime() ?? null;
      const untilDue = nextDueMs === null ? Infinity : nextDueMs - req.clock();
      await session.wait(Math.max(1, Math.min(lingerLeft, untilDue, RECHECK_MS)));
    }
  }

  async function take(): Promise<ClaimedDelivery | null> {
    for (;;) {
      if (stop) return null;
      const next = queue.shift();
      if (next) return next;
      if (claimed >= req.limit) return null;
      filling ??= fill().finally(() => {
        filling = null;
      });
      try {
        await filling;
      } catch (err) {
        halt('error');
        throw err;
      }
    }
  }

  function showSuccess(outcome: AttemptOutcome) {
    if (outcome.atMs - lastShownAt < SHOW_SUCCESS_EVERY_MS) return;
    lastShownAt = outcome.atMs;
    recordEndpointSuccess(db, req.endpointId, new Date(outcome.atMs), outcome.responseCode).catch((err) =>
      logger.warn({ err, endpointId: req.endpointId }, 'latest success not shown on the endpoint'),
    );
  }

  /** POSTs one claimed delivery to the endpoint as it is now; null when nothing was sent (its event is gone). */
  async function attempt(endpoint: EndpointRow, d: ClaimedDelivery): Promise<AttemptOutcome | null> {
    const event = d.event;
    const def = getEventDefinition(d.event_type);
    if (!event || !def) {
      await closeForDeletedEvent(db, d.id);
      return null;
    }
    const body = Buffer.from(JSON.stringify(webhookBody(def, event)), 'utf8');
    const startedAtMs = req.clock();
    const outcome = await sendToEndpoint(deps.httpClient, deps.secretBox, endpoint, {
      eventType: d.event_type,
      idempotencyKey: d.idempotency_key,
      webhookId: d.id,
      body,
    });
    webhookSends.inc({ kind: 'delivery', outcome: outcome.acknowledged ? 'success' : (outcome.error ?? 'failure') });
    const number = d.attempts + 1;
    lastRecord = deps.recorder.add({
      id: d.id,
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
    return { ok: outcome.acknowledged, responseCode: outcome.recordedStatus, atMs: startedAtMs + outcome.durationMs, error: outcome.error };
  }

  /**
   * The endpoint as committed now, once its throttle (`rate_limit`) lets a POST start. Waiting is
   * not a failure and is recorded nowhere. The start is taken with no await between the check and
   * the claim of the slot, so two lanes never share one.
   */
  async function pacedEndpoint(): Promise<EndpointRow | undefined> {
    for (;;) {
      const endpoint = await readEndpoint();
      if (stop || !sending(endpoint)) return endpoint;
      const now = performance.now();
      const wait = paceWaitMs(pacing.get(req.endpointId), now, endpoint.rate_limit);
      if (wait === 0) {
        if (endpoint.rate_limit === null) pacing.delete(req.endpointId);
        else pacing.set(req.endpointId, now);
        return endpoint;
      }
      await pause(Math.min(wait, PACE_RECHECK_MS));
    }
  }

  async function lane(): Promise<void> {
    for (;;) {
      const d = await take();
      if (!d) return;
      const endpoint = await pacedEndpoint();
      // Stopped meanwhile: this delivery stays leased to the session and is released at its end.
      if (stop) return;
      if (!sending(endpoint)) return halt('not_sending');
      try {
        const outcome = await attempt(endpoint, d);
        done++;
        if (!outcome) continue;
        outcomes = compactOutcomes([...outcomes, outcome]);
        if (!outcome.ok) halt('failure');
        else showSuccess(outcome);
      } catch (err) {
        logger.error({ err, deliveryId: d.id }, 'delivery attempt failed before its POST; its lease brings it back');
      }
    }
  }

  try {
    const lanes = await Promise.allSettled(Array.from({ length: deps.concurrency }, lane));
    const failed = lanes.find((l): l is PromiseRejectedResult => l.status === 'rejected');
    // Records land before leases are given back: a released delivery is never one already sent.
    await lastRecord;
    if (claimed > done) await releaseLeases(db, req.owner);
    if (failed) throw failed.reason;
    const more = stop === 'time' || stop === 'cancelled' || (stop === null && claimed >= req.limit);
    const [nextDue, owed] = await Promise.all([nextDueAt(db, req.endpointId), countOwed(db, req.endpointId)]);
    return { outcomes, more, nextDueAtMs: nextDue?.getTime() ?? null, posts: done, owed };
  } finally {
    req.signal.removeEventListener('abort', onAbort);
    session.close();
  }
}
