/** The benchmark's event: a CRM demand of about 1 KiB, and the idempotency key the receiver sees for it. */

// Pads the event's data to about 1 KiB, what a CRM payload of a few fields and a description weighs.
const PAD = 'x'.repeat(1024 - JSON.stringify(demandData('t_000000', 'c_000000', '')).length);
export function demandData(entityId: string, contactId: string, pad = PAD) {
  return {
    entity_type: 'demand',
    entity_id: entityId,
    before_data: null,
    after_data: { id: entityId, version: 1, status: 'open', contact_id: contactId, title: 'Bench demand', description: pad },
    actor_user_id: null,
  };
}
/** The idempotency key the catalog derives for that data: what the receiver sees in X-Idempotency-Key. */
export const demandKey = (entityId: string) => `crm:demand:${entityId}:1`;
