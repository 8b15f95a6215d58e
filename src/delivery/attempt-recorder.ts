/**
 * Records the attempts of every session in the worker in batches: one statement per up to
 * `maxBatch` attempts or per `maxDelayMs`, whichever comes first, one statement in flight at a
 * time, in the order they were added. A POST stays leased until its record lands, so no other
 * session can send it meanwhile; a worker lost before the record sends those POSTs again (at
 * least once), never loses them.
 */
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

export function createAttemptRecorder(db: Db, opts: { maxBatch?: number; maxDelayMs?: number } = {}): AttemptRecorder {
  const maxBatch = opts.maxBatch ?? 128;
  const maxDelayMs = opts.maxDelayMs ?? 5;
  const waiting: { result: AttemptResult; landed: () => void }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inFlight = false;

  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    if (inFlight || waiting.length === 0) return;
    inFlight = true;
    const batch = waiting.splice(0, maxBatch);
    recordDeliveryAttempts(
      db,
      batch.map((w) => w.result),
    )
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
