/**
 * The latest success of each endpoint a long delivery session is sending to, shown on the endpoint
 * about once a second (the console and GET /webhooks/{id} show it while the session runs).
 */
import { recordEndpointSuccesses, type SuccessShown } from '../db/endpoints.js';
import type { Db } from '../db/pool.js';
import { createCoalescer } from '../runtime/coalescer.js';
import { logger } from '../runtime/logger.js';

/**
 * The worker's sessions show their latest successes together: one statement per `windowMs` for
 * every endpoint with news (the latest of each), instead of one commit per endpoint each second
 * (100 sessions: 100 commits a second). Only a display: a session's last success is recorded with
 * its end (`reportSession`), and a success never replaces a later one.
 */
export function showSuccesses(db: Db, windowMs = 250): (shown: SuccessShown) => void {
  const coalescer = createCoalescer<string, SuccessShown>(
    (batch) =>
      recordEndpointSuccesses(db, [...batch.values()]).catch((err) =>
        logger.warn({ err, endpoints: batch.size }, 'latest successes not shown on their endpoints'),
      ),
    windowMs,
  );
  return (shown) => coalescer.add(shown.id, shown);
}
