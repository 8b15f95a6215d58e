/**
 * Consent records (SPEC 3.4, 6.3): every record is kept; one that moves the current state of its
 * (channel, purpose) emits crm.contact.consent_changed, one equal to it is recorded silently.
 * The first record of a (channel, purpose) is a change (from "unknown"). The contact's row lock
 * serializes concurrent records, so each sees the state the one before left.
 */
import { crmContactConsentChanged } from '../core/catalog/crm.js';
import { DomainError, notFound } from '../core/domain-error.js';
import {
  currentConsent,
  insertConsent,
  type ConsentOrigin,
  type ConsentPurpose,
  type ConsentRow,
  type ConsentState,
} from '../db/consents.js';
import { getContact, type Scope } from '../db/contacts.js';
import { enqueueCrmEvent } from '../db/crm-outbox.js';
import { inTransaction } from '../db/pool.js';
import type { IngestDeps } from '../events/deps.js';
import type { StoredEvent } from '../events/store-event.js';
import { emitContactCrmEvents } from './outbox.js';

export interface ConsentInput {
  contactId: string;
  channel: 'chatapp' | 'photoapp';
  purpose: ConsentPurpose;
  state: ConsentState;
  origin: ConsentOrigin;
  evidence: string;
}

export async function recordConsent(
  deps: IngestDeps,
  principal: Scope,
  input: ConsentInput,
): Promise<{ record: ConsentRow; events: StoredEvent[] }> {
  const record = await inTransaction(deps.db, async (tx) => {
    const contact = await getContact(tx, principal, input.contactId, { forUpdate: true });
    if (!contact) throw notFound('contact');
    // A contact is one identity on one channel: a consent for another channel cannot be its.
    if (input.channel !== contact.channel)
      throw new DomainError(422, 'invalid_consent', `channel: this contact is on ${contact.channel}, not ${input.channel}`);
    const current = await currentConsent(tx, contact.id, input.channel, input.purpose);
    const changed = current?.state !== input.state;
    const { channel, purpose, state, origin, evidence } = input;
    const row = await insertConsent(tx, {
      account_id: principal.accountId,
      contact_id: contact.id,
      channel,
      purpose,
      state,
      origin,
      evidence,
      changed,
    });
    if (changed) {
      await enqueueCrmEvent(tx, {
        accountId: principal.accountId,
        contactId: contact.id,
        type: crmContactConsentChanged.type,
        data: crmContactConsentChanged.data.parse({
          contact: { id: contact.id },
          channel: row.channel,
          purpose: row.purpose,
          state: row.state,
          origin: row.origin,
          evidence: row.evidence,
          occurred_at: row.created_at.toISOString(),
        }),
        refs: { consent_record_id: row.id },
        occurredAt: row.created_at,
      });
    }
    return row;
  });
  const events = await emitContactCrmEvents(deps, input.contactId);
  return { record, events };
}
