/**
 * Records a session's attempts in batches: one statement per up to `maxBatch` attempts or per
 * `maxDelayMs`, whichever comes first, with one statement in flight at a time. A POST stays
 * leased until its record lands, so no other round can send it meanwhile; a worker lost before
 * the record sends those POSTs again (at least once), never loses them.
 */
import { recordDeliveryAttempts, type AttemptResult } from '../db/deliveries.js';
import type { Db } from '../db/pool.js';
import { logger } from '../runtime/logger.js';

export interface AttemptRecorder {
  add(result: AttemptResult): void;
  /** Records everything added so far; resolves when it has landed (or failed and been logged). */
  close(): Promise<void>;
}

export function createAttemptRecorder(db: Db, opts: { maxBatch?: number; maxDelayMs?: number } = {}): AttemptRecorder {
  const maxBatch = opts.maxBatch ?? 64;
  const maxDelayMs = opts.maxDelayMs ?? 5;
  const waiting: AttemptResult[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (inFlight) return inFlight.then(flush);
    if (waiting.length === 0) return Promise.resolve();
    const batch = waiting.splice(0, maxBatch);
    inFlight = recordDeliveryAttempts(db, batch)
      .catch((err) =>
        // The leases bring these deliveries back once they end; they are sent again then.
        logger.error({ err, deliveries: batch.length }, 'delivery attempts not recorded; they will be sent again when their leases end'),
      )
      .finally(() => {
        inFlight = undefined;
        if (waiting.length > 0) timer ??= setTimeout(() => void flush(), waiting.length >= maxBatch ? 0 : maxDelayMs);
      });
    return inFlight;
  }

  return {
    add(result) {
      waiting.push(result);
      if (inFlight) return;
      if (waiting.length >= maxBatch) void flush();
      else timer ??= setTimeout(() => void flush(), maxDelayMs);
    },
    async close() {
      while (waiting.length > 0 || inFlight) await flush();
    },
  };
}
