/**
 * Stores the CRM events a write enqueued (src/db/crm-outbox.ts) through the normal ingest path:
 * the stream, routing to endpoints, the wake-up of their workflows. The write and its outbox
 * row commit together, so a change is never lost; storing twice is harmless because the
 * idempotency key (transaction id, consent record id) is fixed when the row is written.
 */
import { getEventDefinition } from '../core/catalog/index.js';
import { pendingCrmEvents, removeCrmEvent, type CrmOutboxRow } from '../db/crm-outbox.js';
import { wakeFor, type IngestDeps } from '../events/deps.js';
import { ingestEvent, storeEvent, type StoredEvent } from '../events/store-event.js';

async function emit(deps: IngestDeps, row: CrmOutboxRow): Promise<StoredEvent> {
  const def = getEventDefinition(row.type);
  if (!def) throw new Error(`crm outbox holds an unknown event type ${row.type}`);
  const ca = row.channel_account;
  const stored = await storeEvent(
    deps.db,
    ingestEvent({
      accountId: row.account_id,
      environment: ca.environment,
      def,
      data: row.data,
      refs: row.refs,
      customerId: ca.customer_id,
      channelAccount: { id: ca.id, channel: ca.channel, display: ca.display },
      // Deleting the contact removes the event from the stream (SPEC 6.5 rule 6).
      contactRef: row.contact_id,
      streamContext: { contactId: row.contact_id },
      occurredAt: new Date(row.occurred_at),
    }),
    deps.now?.(),
  );
  if (stored.created) wakeFor(deps, row.account_id, stored);
  await removeCrmEvent(deps.db, row.seq);
  return stored;
}

/**
 * Stores every waiting event of a contact, in the order the changes committed: a writer calls
 * it after its commit, so it also stores what an earlier writer left behind (a crash between
 * commit and store), before its own change.
 */
export async function emitContactCrmEvents(deps: IngestDeps, contactId: string): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for (const row of await pendingCrmEvents(deps.db, { contactId })) out.push(await emit(deps, row));
  return out;
}

/**
 * The sweep: stores events left waiting longer than `olderThanMs` (their writer died after its
 * commit). For a periodic job; answers how many it stored or found stored.
 */
export async function emitPendingCrmEvents(deps: IngestDeps, opts: { olderThanMs?: number; limit?: number } = {}): Promise<number> {
  const rows = await pendingCrmEvents(deps.db, { olderThanMs: opts.olderThanMs ?? 60_000, limit: opts.limit ?? 500 });
  for (const row of rows) await emit(deps, row);
  return rows.length;
}
