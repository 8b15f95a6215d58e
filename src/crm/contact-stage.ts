/**
 * Edits of a contact, and its moves through the funnel (SPEC 3.4, 6.3): a real stage change
 * emits crm.contact.stage_changed with a fresh transaction id; the same stage, or an edit of
 * other fields, emits nothing (SPEC 6.4).
 *
 * Concurrency: the contact's row is locked for the whole decision, so concurrent changes are
 * serialized and each sees the stage the previous one left: every real change gives exactly one
 * event with the right previous and new stage. The event is enqueued in the same transaction
 * (src/crm/outbox.ts) and stored in the stream right after the commit, in commit order.
 */
import crypto from 'node:crypto';
import { crmContactStageChanged } from '../core/catalog/crm.js';
import { DomainError, notFound } from '../core/domain-error.js';
import { getContact, updateContact, type ContactChanges, type ContactRow, type Scope } from '../db/contacts.js';
import { enqueueCrmEvent } from '../db/crm-outbox.js';
import { inTransaction, type Queryable } from '../db/pool.js';
import { findStageByKey, stagePosition, type StageRef } from '../db/stages.js';
import type { IngestDeps } from '../events/deps.js';
import type { StoredEvent } from '../events/store-event.js';
import { emitContactCrmEvents } from './outbox.js';

export type ChangedBy = 'manual' | 'auto' | 'system';

export interface ContactEdit {
  contactId: string;
  /** A stage key; null leaves the funnel; undefined keeps the stage. */
  stageKey?: string | null;
  changedBy?: ChangedBy;
  /** Only move the contact when it is still on this stage (a stage being deleted). */
  onlyFromStageId?: string;
  /** Only move the contact further down the funnel than its stage (a broadcast reply's promotion). */
  onlyForward?: boolean;
  profileName?: string | null;
  /** Merged into the stored metadata; a null value removes its key. */
  metadata?: Record<string, unknown>;
}

export interface ContactEditResult {
  contact: ContactRow;
  /** True when the stage really changed (and an event was emitted). */
  stageChanged: boolean;
  /** What this call stored in the stream: its own change, and any earlier one left waiting. */
  events: StoredEvent[];
}

/** The contact moves to the stage with that key (null: out of the funnel). Reused by broadcast-reply promotion with `changedBy: 'auto'`. */
export function changeContactStage(
  deps: IngestDeps,
  principal: Scope,
  change: { contactId: string; stageKey: string | null; changedBy: ChangedBy },
): Promise<ContactEditResult> {
  return editContact(deps, principal, change);
}

/** Applies an edit in its own transaction, then stores the events it enqueued. */
export async function editContact(deps: IngestDeps, principal: Scope, edit: ContactEdit): Promise<ContactEditResult> {
  const stageChanged = await inTransaction(deps.db, (tx) => applyContactEdit(tx, principal, edit));
  const events = await emitContactCrmEvents(deps, edit.contactId);
  const contact = await getContact(deps.db, principal, edit.contactId);
  // Deleted between the commit and this read: the edit happened, the contact is gone.
  if (!contact) throw notFound('contact');
  return { contact, stageChanged, events };
}

/**
 * Inside the caller's transaction: locks the contact, writes the edit, and enqueues the stage
 * event when the stage really changes. True when it did.
 */
export async function applyContactEdit(tx: Queryable, principal: Scope, edit: ContactEdit): Promise<boolean> {
  // The stage first, shared-locked so it cannot be deleted under us; then the contact. A stage
  // deletion locks in the same order (stage, then its contacts), so the two never deadlock.
  const named = typeof edit.stageKey === 'string';
  const target = named ? await findStageByKey(tx, principal.accountId, edit.stageKey!, { share: true }) : null;
  const contact = await getContact(tx, principal, edit.contactId, { forUpdate: true });
  if (!contact) throw notFound('contact');
  if (named && !target) throw new DomainError(422, 'invalid_stage', `no stage with key "${edit.stageKey}" (see GET /api/v1/stages)`);

  const changes: ContactChanges = {};
  if (edit.profileName !== undefined) changes.profileName = edit.profileName;
  if (edit.metadata !== undefined) changes.metadata = mergeMetadata(contact.metadata, edit.metadata);
  const previous: StageRef | null = contact.stage_id
    ? { id: contact.stage_id, key: contact.stage_key!, label: contact.stage_label! }
    : null;
  const next: StageRef | null = target ? { id: target.id, key: target.key, label: target.label } : null;
  const moves =
    edit.stageKey !== undefined &&
    (previous?.id ?? null) !== (next?.id ?? null) &&
    (edit.onlyFromStageId === undefined || previous?.id === edit.onlyFromStageId) &&
    (!edit.onlyForward || (target !== null && target !== undefined && (await isFurtherDown(tx, target, previous))));
  if (moves) changes.stageId = next?.id ?? null;
  await updateContact(tx, contact.id, changes);
  if (!moves) return false;

  const occurredAt = new Date();
  const after = { ...contact, profile_name: changes.profileName !== undefined ? changes.profileName : contact.profile_name };
  await enqueueCrmEvent(tx, {
    accountId: principal.accountId,
    contactId: contact.id,
    type: crmContactStageChanged.type,
    data: stageChangedData(after, previous, next, edit.changedBy ?? 'manual', occurredAt),
    // One transaction id per change: the idempotency key tells two moves between the same stages apart.
    refs: { transaction_id: crypto.randomUUID() },
    occurredAt,
  });
  return true;
}

/** Read under the contact's row lock, so the stage compared is the one the contact is on now. */
async function isFurtherDown(tx: Queryable, target: { position: number }, previous: StageRef | null): Promise<boolean> {
  if (!previous) return true;
  const position = await stagePosition(tx, previous.id);
  return position === undefined || position < target.position;
}

/** The payload of SPEC 6.3: phone_number_id only for chatapp contacts, null fields omitted. */
export function stageChangedData(
  contact: Pick<ContactRow, 'id' | 'channel' | 'phone_number_id' | 'wa_id' | 'user_id' | 'username' | 'phone' | 'profile_name'>,
  previous: StageRef | null,
  next: StageRef | null,
  changedBy: ChangedBy,
  occurredAt: Date,
): Record<string, unknown> {
  return crmContactStageChanged.data.parse({
    phone_number_id: contact.channel === 'chatapp' ? contact.phone_number_id : null,
    contact: {
      id: contact.id,
      wa_id: contact.wa_id,
      user_id: contact.user_id,
      username: contact.username,
      phone: contact.phone,
      profile_name: contact.profile_name,
    },
    previous_stage: previous,
    new_stage: next,
    changed_by: changedBy,
    occurred_at: occurredAt.toISOString(),
  });
}

function mergeMetadata(current: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out = { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}
