/**
 * After a commit that leaves deliveries due, the endpoints are named to the workers by Postgres
 * NOTIFY, coalesced over a few milliseconds: one statement for every endpoint woken meanwhile. The
 * first after a quiet spell goes at once (a sparse publish's delivery waited 2 ms more for nothing),
 * and with a lone publish, in its own statement (`claimInline`). A worker pokes the endpoint's
 * running delivery session, or signals its workflow.
 */
import type { AccountId, EndpointId } from '../core/ids.js';
import { notifyDue } from '../db/due-notifications.js';
import type { Db } from '../db/pool.js';
import { createCoalescer, type Coalescer } from '../runtime/coalescer.js';
import { traceHop, tracing } from '../runtime/hop-trace.js';
import { logger } from '../runtime/logger.js';
import { merged } from '../core/merged.js';

/** Endpoint id → its Account id. */
export interface DueWakes extends Coalescer<EndpointId, AccountId> {
  /**
   * The channel, when a wake sent now would go at once after a quiet spell: the caller names its
   * endpoints in its own statement instead (a lone publish's append: `storeEvent`'s `wakes`), and
   * wakes added within the window after it wait for its end. Null: add them as usual.
   */
  claimInline(): string | null;
}

/**
 * A wake goes in a publish's own statement only this long after the last one went out. A transaction
 * that notifies holds a cluster-wide lock through its commit's WAL flush (Postgres's async.c), so
 * appends that notify commit one after another, where others share a flush; after a quiet spell
 * (50 such commits a second per API process at most) that costs nothing, and under load (a batch
 * every few milliseconds: 37 % of the warm phase's appends went inline after 2 ms) it does not happen.
 */
const INLINE_AFTER_QUIET_MS = 20;

export function createDueWakes(db: Db, channel: string, windowMs = 2): DueWakes {
  const coalescer = createCoalescer<EndpointId, AccountId>(
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
  return merged(coalescer, { claimInline: () => (coalescer.claimLeading(INLINE_AFTER_QUIET_MS) ? channel : null) });
}
