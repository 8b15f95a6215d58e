/**
 * After a commit that leaves deliveries due, the endpoints are named to the workers by Postgres
 * NOTIFY, coalesced over a few milliseconds: one statement for every endpoint woken meanwhile. The
 * first after a quiet spell goes at once (a sparse publish's delivery waited 2 ms more for nothing).
 * A worker pokes the endpoint's running delivery session, or signals its workflow.
 */
import type { AccountId, EndpointId } from '../core/ids.js';
import { notifyDue } from '../db/due-notifications.js';
import type { Db } from '../db/pool.js';
import { createCoalescer, type Coalescer } from '../runtime/coalescer.js';
import { traceHop, tracing } from '../runtime/hop-trace.js';
import { logger } from '../runtime/logger.js';

/** Endpoint id → its Account id. */
export type DueWakes = Coalescer<EndpointId, AccountId>;

export function createDueWakes(db: Db, channel: string, windowMs = 2): DueWakes {
  return createCoalescer<EndpointId, AccountId>(
    (batch) => {
      if (tracing) for (const endpointId of batch.keys()) traceHop('notify', endpointId);
      return notifyDue(
        db,
        channel,
        [...batch].map(([endpointId, accountId]) => ({ endpointId, accountId })),
      ).catch((err) =>
        // A lost wake is not a lost delivery: the rows stay due, and the workers' sweep finds them.
        logger.warn({ err, endpoints: batch.size }, 'due notification not sent'),
      );
    },
    windowMs,
    { leading: true },
  );
}
