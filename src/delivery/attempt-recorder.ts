/**
 * Records the attempts of every session in the worker in batches: one statement per up to
 * `maxBatch` attempts or per `maxDelayMs`, whichever comes first, one statement in flight at a
 * time, in the order they were added. A POST stays leased until its record lands, so no other
 * session can send it meanwhile; a worker lost before the record sends those POSTs again (at
 * least once), never loses them.
 *
 * A batch whose statement fails is tried again, doubling the wait, for up to `retryForMs`: its
 * POSTs were sent, and a record given up is a POST sent twice (its lease lapses, or its session,
 * ending with deliveries unsent, gives back every lease of its owner, and another session sends it).
 */
import { doublingBackoffMs } from '../core/backoff.js';
import { recordDeliveryAttempts, type AttemptResult } from '../db/deliveries.js';
import type { Db } from '../db/pool.js';
import { logger } from '../runtime/logger.js';

export interface AttemptRecorder {
  /**
   * Resolves when the record has landed (or failed and been logged). Records land in the order
   * they were added, so awaiting the last one a session added awaits all of its records.
   */
  add(result: AttemptResult): Promise<void>;
}

/**
 * How long a failing batch is tried again before it is given up (its POSTs then sent again once
 * their leases end): within the least lease a POST's delivery has left when it ends (a direct
 * session's, renewed every 2 s for 10 s until then: 8 s), so a record that lands late still lands
 * before another session may claim it.
 */
const RETRY_FOR_MS = 5_000;

export function createAttemptRecorder(db: Db, opts: { maxBatch?: number; maxDelayMs?: number; retryForMs?: number } = {}): AttemptRecorder {
  const maxBatch = opts.maxBatch ?? 128;
  const maxDelayMs = opts.maxDelayMs ?? 5;
  const retryForMs = opts.retryForMs ?? RETRY_FOR_MS;
  const waiting: { result: AttemptResult; landed: () => void }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inFlight = false;

  /** The batch's statement, tried again while it fails and `retryForMs` allows. */
  async function record(results: AttemptResult[]): Promise<void> {
    const since = Date.now();
    for (let failures = 0; ; failures++) {
      try {
        return await recordDeliveryAttempts(db, results);
      } catch (err) {
        const waitMs = doublingBackoffMs(50, failures, 1_000);
        if (Date.now() + waitMs - since > retryForMs) throw err;
        logger.warn({ err, deliveries: results.length, failures: failures + 1 }, 'delivery attempts not recorded; trying again');
        await new Promise((r) => setTimeout(r, waitMs));
      }
    }
  }

  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    if (inFlight || waiting.length === 0) return;
    inFlight = true;
    const batch = waiting.splice(0, maxBatch);
    record(batch.map((w) => w.result))
      .catch((err) =>
        // The leases bring these deliveries back once they end; they are sent again then.
        logger.error({ err, deliveries: batch.length }, 'delivery attempts not recorded; they will be sent again when their leases end'),
      )
      .finally(() => {
        inFlight = false;
        for (const w of batch) w.landed();
        if (waiting.length > 0) timer ??= setTimeout(flush, waiting.length >= maxBatch ? 0 : maxDelayMs);
      });
  }

  return {
    add(result) {
      return new Promise<void>((landed) => {
        waiting.push({ result, landed });
        if (inFlight) return;
        if (waiting.length >= maxBatch) flush();
        else timer ??= setTimeout(flush, maxDelayMs);
      });
    },
  };
}
