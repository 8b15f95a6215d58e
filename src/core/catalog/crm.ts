import { z } from 'zod';
import { CHANNELS, define, entityRef, id, isoTimestamp, keyPart, nullableString, withoutNulls, type EventDefinition } from './types.js';

// CRM events come from contacts of any channel: the envelope carries the contact's channel account, never external_id.
const crmEvent = { channel: null, channelStamped: true, hasExternalId: false } as const;

/** Contact as shown in CRM payloads: null fields omitted. */
const crmContact = withoutNulls(
  z.object({
    id,
    wa_id: z.string().optional(),
    user_id: z.string().optional(),
    username: z.string().optional(),
    phone: z.string().optional(),
    profile_name: z.string().optional(),
  }),
);

const stage = z.object({ id, key: id, label: z.string() });

export const crmContactStageChanged = define({
  ...crmEvent,
  type: 'crm.contact.stage_changed',
  category: 'crm',
  description: "A contact's funnel stage changed (kanban drag, API, automatic promotion, or stage deleted).",
  data: withoutNulls(
    z
      .object({
        /** only when the contact's channel is the primary channel */
        phone_number_id: id.optional(),
        contact: crmContact,
        /** absent when entering the funnel */
        previous_stage: stage.optional(),
        /** absent when leaving the funnel */
        new_stage: stage.optional(),
        changed_by: z.enum(['manual', 'auto', 'system']),
        occurred_at: isoTimestamp,
      })
      .refine((d) => d.previous_stage !== undefined || d.new_stage !== undefined, {
        message: 'previous_stage or new_stage is required',
        path: ['new_stage'],
      }),
  ),
  refs: z.object({ transaction_id: id }),
  idempotencyKey: (data, refs) => {
    const stageKey = (name: string) => (data[name] == null ? 'none' : keyPart(data, name, 'key'));
    return `crm:stage:${keyPart(data, 'contact', 'id')}:${keyPart(refs, 'transaction_id')}:${stageKey('previous_stage')}>${stageKey('new_stage')}`;
  },
});

export const CONSENT_EVIDENCE_MAX = 500;

export const crmContactConsentChanged = define({
  ...crmEvent,
  type: 'crm.contact.consent_changed',
  // Despite the crm prefix, consent travels with messages (SPEC 2.2).
  category: 'messages',
  description: 'A consent record of a contact was granted or revoked for utility or marketing messages.',
  data: z.object({
    contact: entityRef,
    channel: z.enum(CHANNELS),
    purpose: z.enum(['utility', 'marketing']),
    state: z.enum(['granted', 'revoked']),
    origin: z.enum(['manual', 'import', 'api', 'keyword', 'conversation_button']),
    evidence: z.string().max(CONSENT_EVIDENCE_MAX).default(''),
    occurred_at: isoTimestamp,
  }),
  refs: z.object({ consent_record_id: id }),
  idempotencyKey: (_data, refs) => `consent:${keyPart(refs, 'consent_record_id')}`,
});

function entityRow(entity: 'opportunity' | 'demand') {
  const row = z.looseObject({
    id: z.string().optional(),
    version: z.number().int().nonnegative(),
    status: id,
    contact_id: id,
    title: z.string().optional(),
  });
  return entity === 'opportunity'
    ? row.extend({ value_cents: z.number().int().nullable().optional(), currency: z.string().nullable().optional() })
    : row;
}

function entityEvent(entity: 'opportunity' | 'demand', action: 'created' | 'updated'): EventDefinition {
  const row = entityRow(entity);
  return define({
    ...crmEvent,
    type: `crm.${entity}.${action}`,
    category: 'crm',
    description: `${entity === 'opportunity' ? 'An opportunity' : 'A demand'} was ${action}; each write increments its version.`,
    data: z
      .object({
        entity_type: z.literal(entity),
        entity_id: id,
        before_data: action === 'created' ? z.null().default(null) : row,
        after_data: row,
        actor_user_id: nullableString,
      })
      .refine((d) => d.after_data.id === undefined || d.after_data.id === d.entity_id, {
        message: 'after_data.id must equal entity_id',
        path: ['after_data', 'id'],
      }),
    idempotencyKey: (data) => `crm:${entity}:${keyPart(data, 'entity_id')}:${keyPart(data, 'after_data', 'version')}`,
  });
}

export const crmOpportunityCreated = entityEvent('opportunity', 'created');
export const crmOpportunityUpdated = entityEvent('opportunity', 'updated');
export const crmDemandCreated = entityEvent('demand', 'created');
export const crmDemandUpdated = entityEvent('demand', 'updated');

export const crmAppointmentCreated = define({
  ...crmEvent,
  type: 'crm.appointment_created',
  category: 'crm',
  description: 'An appointment was scheduled for a contact.',
  data: withoutNulls(
    z.object({
      /** absent outside the primary channel */
      phone_number_id: id.optional(),
      appointment: withoutNulls(
        z.object({ id, contact_id: id, scheduled_at: isoTimestamp, note: z.string().optional(), created_at: isoTimestamp }),
      ),
      contact: crmContact,
    }),
  ),
  idempotencyKey: (data) => `crm:appointment:${keyPart(data, 'appointment', 'id')}:created`,
});

const appointmentRow = z.looseObject({
  id,
  contact_id: z.string().optional(),
  status: id,
  scheduled_at: isoTimestamp,
  revision: z.number().int().nonnegative(),
});

export const crmAppointmentUpdated = define({
  ...crmEvent,
  type: 'crm.appointment_updated',
  category: 'crm',
  description: 'An appointment was rescheduled, confirmed, cancelled, marked as no-show or edited.',
  data: z.object({
    appointment: appointmentRow,
    before_data: z.looseObject({}),
    after_data: z.looseObject({}),
  }),
  idempotencyKey: (data) => `appointment:${keyPart(data, 'appointment', 'id')}:${keyPart(data, 'appointment', 'revision')}`,
});

export const crmEvents: readonly EventDefinition[] = [
  crmContactStageChanged,
  crmContactConsentChanged,
  crmOpportunityCreated,
  crmOpportunityUpdated,
  crmDemandCreated,
  crmDemandUpdated,
  crmAppointmentCreated,
  crmAppointmentUpdated,
];
