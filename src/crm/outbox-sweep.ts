/**
 * Stores the CRM events an API process committed but did not get to store (it died between
 * its commit and the store: src/crm/outbox.ts). Every writer of a contact stores what waits for it
 * first, so this only catches contacts nobody writes to again. Any number of workers may run
 * it: a second store of the same event is found by its idempotency key.
 */
import { emitPendingCrmEvents } from './outbox.js';
import type { IngestDeps } from '../events/deps.js';
import { logger } from '../runtime/logger.js';

export function runCrmOutboxSweep(
  deps: IngestDeps,
  opts: { intervalMs?: number; olderThanMs?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const interval = opts.intervalMs ?? 30_000;
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const tick = async () => {
      try {
        const stored = await emitPendingCrmEvents(deps, { olderThanMs: opts.olderThanMs ?? 60_000 });
        if (stored > 0) logger.info({ stored }, 'crm events left waiting were stored');
      } catch (err) {
        logger.warn({ err }, 'crm outbox sweep failed; will retry');
      }
      if (opts.signal?.aborted) return resolve();
      timer = setTimeout(tick, interval);
    };
    opts.signal?.addEventListener('abort', () => {
      if (timer) clearTimeout(timer);
      resolve();
    });
    void tick();
  });
}
