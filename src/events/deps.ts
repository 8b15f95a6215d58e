import type { AccountId } from '../core/ids.js';
import type { Db } from '../db/pool.js';
import type { DueWakes } from './due-wakes.js';
import { traceHop, tracing } from '../runtime/hop-trace.js';
import type { StoredEvent } from './store-event.js';

export interface IngestDeps {
  db: Db;
  wakes: DueWakes;
  /** The clock the Free-plan rules are judged by (SPEC 8); the system clock when unset. Tests pin it. */
  now?: () => Date;
}

/**
 * After commit: each endpoint with a new pending delivery is woken (coalesced): to send it, or to
 * time its hold; unless the commit itself woke them (`StoredEvent.woken`).
 */
export function wakeFor(deps: IngestDeps, accountId: AccountId, stored: StoredEvent): void {
  for (const d of stored.deliveries) {
    if (d.status !== 'pending') continue;
    if (!stored.woken) deps.wakes.add(d.endpointId, accountId);
    else if (tracing) traceHop('notify', d.endpointId);
  }
}
