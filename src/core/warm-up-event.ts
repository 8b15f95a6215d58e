/**
 * The synthetic event a process's warm-up runs on (src/api/publish-warm-up.ts,
 * src/delivery/sending-warm-up.ts): a CRM demand of about 1 KiB, the size of a typical event, that
 * the catalog accepts as published.
 */
export const WARM_UP_EVENT_TYPE = 'crm.demand.created';

const DESCRIPTION = 'x'.repeat(800);

export function warmUpEventData(n: number): Record<string, unknown> {
  const id = `warm-up-${n}`;
  return {
    entity_type: 'demand',
    entity_id: id,
    before_data: null,
    after_data: { id, version: 1, status: 'open', contact_id: `warm-up-contact-${n}`, title: 'Warm-up demand', description: DESCRIPTION },
    actor_user_id: null,
  };
}

/** What a warm-up did: its requests answered as the real ones would have been (2xx), of how many, in how long. */
export interface WarmUpReport {
  acknowledged: number;
  requests: number;
  ms: number;
}
