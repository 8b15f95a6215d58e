/**
 * Deleting a funnel stage (SPEC 6.3 trigger "stage deleted"): every contact on it leaves the
 * funnel with a crm.contact.stage_changed `changed_by: system`, in the stream of that contact's
 * environment, and the stage goes, all in one transaction. Stages belong to the Account, so
 * contacts of both environments move.
 */
import { notFound } from '../core/domain-error.js';
import { inTransaction } from '../db/pool.js';
import { contactsOnStage, deleteStage, lockStage } from '../db/stages.js';
import type { IngestDeps } from '../events/deps.js';
import { applyContactEdit } from './contact-stage.js';
import { emitContactCrmEvents } from './outbox.js';

export async function deleteStageMovingContacts(deps: IngestDeps, accountId: string, stageId: string): Promise<{ contactsMoved: number }> {
  const moved = await inTransaction(deps.db, async (tx) => {
    // Locked first: no contact can move onto it from here on (applyContactEdit share-locks its target).
    const stage = await lockStage(tx, accountId, stageId);
    if (!stage) throw notFound('stage');
    const contacts = await contactsOnStage(tx, stage.id);
    for (const c of contacts) {
      await applyContactEdit(
        tx,
        { accountId, environment: c.environment },
        { contactId: c.id, stageKey: null, changedBy: 'system', onlyFromStageId: stage.id },
      );
    }
    await deleteStage(tx, stage.id);
    return contacts.map((c) => c.id);
  });
  for (const contactId of moved) await emitContactCrmEvents(deps, contactId);
  return { contactsMoved: moved.length };
}
