/** Realistic payloads of every catalog type, shared by the catalog unit tests and the ingest tests. */
export const WAMID = 'wamid.HBgNNTUxMTk5OTk5ODg4OBUCABIYIDNBMDJCMEE0QjY1RjM1QTk2QjI2QjM3M0Y0QzQ3NkM3AA==';
export const CONTACT_ID = '7b0f3c1e-5d7a-4c1b-9a57-0d1f2e3a4b5c';

export const receivedData = {
  phone_number_id: '106540352242922',
  message: {
    from: '5511999998888',
    id: WAMID,
    timestamp: '1763805600',
    type: 'text',
    text: { body: 'Oi, quero saber o preço' },
    external_id: WAMID,
  },
  contact: {
    wa_id: '5511999998888',
    user_id: null,
    username: null,
    phone: '5511999998888',
    profile_name: 'Maria Souza',
    metadata: { plan: 'gold' },
  },
};

export const statusData = (status: string) => ({
  phone_number_id: '106540352242922',
  status,
  message_id: WAMID,
  recipient_id: '5511999998888',
  pricing: { billable: true, pricing_model: 'PMP', category: 'utility', type: 'regular' },
  errors: null,
});

export const stage = (key: string) => ({ id: `stage-${key}`, key, label: key.replace(/_/g, ' ') });

export const opportunityRow = (version: number) => ({
  id: 'opp_01',
  version,
  status: 'open',
  contact_id: CONTACT_ID,
  title: 'Plano anual',
  value_cents: 129900,
  currency: 'BRL',
});
export const demandRow = (version: number) => ({
  id: 'dem_01',
  version,
  status: 'open',
  contact_id: CONTACT_ID,
  title: 'Orçamento de reforma',
});
export const appointmentRow = (revision: number, status = 'scheduled') => ({
  id: 'apt_01',
  contact_id: CONTACT_ID,
  status,
  scheduled_at: '2026-11-25T14:00:00-03:00',
  note: null,
  revision,
  created_at: '2026-11-22T10:00:00Z',
});

export interface Sample {
  data: Record<string, unknown>;
  refs?: Record<string, unknown>;
  key: string;
  /** a broken payload and the path the first issue must name */
  broken: { data: Record<string, unknown>; refs?: Record<string, unknown>; path: string };
}

export const samples: Record<string, Sample> = {
  'chatapp.message.received': {
    data: receivedData,
    key: WAMID,
    broken: { data: { ...receivedData, message: { ...receivedData.message, id: undefined } }, path: 'message.id' },
  },
  'chatapp.message.sent': {
    data: { ...statusData('sent'), conversation: { id: 'a75d17ad06104c51166f948319b03c6a', expiration_timestamp: '1763892000' } },
    key: `${WAMID}:sent`,
    broken: { data: statusData('delivered'), path: 'status' },
  },
  'chatapp.message.delivered': {
    data: statusData('delivered'),
    key: `${WAMID}:delivered`,
    broken: { data: statusData('read'), path: 'status' },
  },
  'chatapp.message.read': {
    data: { ...statusData('read'), pricing: null },
    key: `${WAMID}:read`,
    broken: { data: { ...statusData('read'), message_id: 42 }, path: 'message_id' },
  },
  'chatapp.message.failed': {
    data: {
      ...statusData('failed'),
      pricing: null,
      errors: [
        {
          code: 131047,
          title: 'Re-engagement message',
          message: 'Re-engagement message',
          error_data: { details: 'Message failed to send because more than 24 hours have passed.' },
        },
      ],
    },
    key: `${WAMID}:failed`,
    broken: { data: { ...statusData('failed'), errors: [{ title: 'no code' }] }, path: 'errors[0].code' },
  },
  'chatapp.message.echo': {
    data: {
      phone_number_id: '106540352242922',
      message: {
        from: '5511988887777',
        to: '5511999998888',
        id: WAMID,
        timestamp: '1763805600',
        type: 'text',
        text: { body: 'Já te envio' },
        external_id: WAMID,
      },
      contact: { wa_id: '5511999998888', user_id: null, username: null, phone: '5511999998888', profile_name: null },
      source_app: 'business_app',
    },
    key: `${WAMID}:echo`,
    broken: {
      data: { phone_number_id: '106540352242922', message: { id: WAMID, type: 'text', external_id: WAMID }, contact: { wa_id: '' } },
      path: 'contact.wa_id',
    },
  },
  'chatapp.message.edited': {
    data: {
      phone_number_id: '106540352242922',
      message_id: WAMID,
      edited_at: '2026-11-22T10:01:00.000Z',
      message: { type: 'text', text: { body: 'Já te envio o orçamento' } },
    },
    key: `${WAMID}:edited:2026-11-22T10:01:00.000Z`,
    broken: { data: { phone_number_id: '106540352242922', message_id: WAMID, edited_at: '1763805660', message: {} }, path: 'edited_at' },
  },
  'chatapp.message.revoked': {
    data: { phone_number_id: '106540352242922', message_id: WAMID, revoked_at: '2026-11-22T10:02:00Z' },
    key: `${WAMID}:revoked`,
    broken: { data: { phone_number_id: '106540352242922', revoked_at: '2026-11-22T10:02:00Z' }, path: 'message_id' },
  },
  'chatapp.account.updated': {
    data: {
      waba_id: '102290129340398',
      account_event: 'ACCOUNT_VIOLATION',
      ban_state: null,
      restrictions: null,
      violation_type: 'SPAM',
      occurred_at: '2026-11-22T10:00:00.000Z',
    },
    key: '', // hash, checked separately
    broken: { data: { waba_id: '102290129340398', ban_state: 'DISABLE' }, path: 'account_event' },
  },
  'chatapp.phone_number.quality_updated': {
    data: {
      waba_id: '102290129340398',
      phone_number_id: '106540352242922',
      display_phone_number: '15550783881',
      messaging_limit_tier: 'TIER_2K',
      occurred_at: null,
    },
    key: '',
    broken: {
      data: { waba_id: '102290129340398', phone_number_id: '106540352242922', messaging_limit_tier: 'GREEN' },
      path: 'messaging_limit_tier',
    },
  },
  'chatapp.phone_number.connected': {
    data: {
      waba_id: '102290129340398',
      phone_number_id: '106540352242922',
      display_phone_number: '+55 11 98888-7777',
      connection_mode: 'coexistence',
      setup_link_id: 'sl_9f8e7d',
      occurred_at: '2026-11-22T10:00:00Z',
    },
    key: 'chatapp.phone_number.connected:sl_9f8e7d:106540352242922',
    broken: {
      data: {
        waba_id: '1',
        phone_number_id: '2',
        display_phone_number: '3',
        connection_mode: 'shared',
        setup_link_id: 'x',
        occurred_at: '2026-11-22T10:00:00Z',
      },
      path: 'connection_mode',
    },
  },
  'crm.contact.stage_changed': {
    data: {
      phone_number_id: '106540352242922',
      contact: { id: CONTACT_ID, wa_id: '5511999998888', phone: '5511999998888', profile_name: 'Maria Souza' },
      previous_stage: stage('lead'),
      new_stage: stage('proposal_sent'),
      changed_by: 'manual',
      occurred_at: '2026-11-22T10:00:00Z',
    },
    refs: { transaction_id: 'tx_123' },
    key: `crm:stage:${CONTACT_ID}:tx_123:lead>proposal_sent`,
    broken: {
      data: { contact: { id: CONTACT_ID }, new_stage: stage('lead'), changed_by: 'robot', occurred_at: '2026-11-22T10:00:00Z' },
      refs: { transaction_id: 'tx_1' },
      path: 'changed_by',
    },
  },
  'crm.contact.consent_changed': {
    data: {
      contact: { id: CONTACT_ID },
      channel: 'chatapp',
      purpose: 'marketing',
      state: 'granted',
      origin: 'conversation_button',
      evidence: 'Clicked "Quero receber ofertas"',
      occurred_at: '2026-11-22T10:00:00-03:00',
    },
    refs: { consent_record_id: 'cr_77' },
    key: 'consent:cr_77',
    broken: {
      data: {
        contact: { id: CONTACT_ID },
        channel: 'chatapp',
        purpose: 'marketing',
        state: 'granted',
        origin: 'api',
        evidence: 'x'.repeat(501),
        occurred_at: '2026-11-22T10:00:00Z',
      },
      refs: { consent_record_id: 'cr_77' },
      path: 'evidence',
    },
  },
  'crm.opportunity.created': {
    data: { entity_type: 'opportunity', entity_id: 'opp_01', before_data: null, after_data: opportunityRow(1), actor_user_id: 'usr_5' },
    key: 'crm:opportunity:opp_01:1',
    broken: {
      data: { entity_type: 'demand', entity_id: 'opp_01', before_data: null, after_data: opportunityRow(1), actor_user_id: null },
      path: 'entity_type',
    },
  },
  'crm.opportunity.updated': {
    data: {
      entity_type: 'opportunity',
      entity_id: 'opp_01',
      before_data: opportunityRow(1),
      after_data: { ...opportunityRow(2), status: 'won' },
      actor_user_id: null,
    },
    key: 'crm:opportunity:opp_01:2',
    broken: {
      data: {
        entity_type: 'opportunity',
        entity_id: 'opp_01',
        before_data: opportunityRow(1),
        after_data: { ...opportunityRow(2), version: '2' },
      },
      path: 'after_data.version',
    },
  },
  'crm.demand.created': {
    data: { entity_type: 'demand', entity_id: 'dem_01', before_data: null, after_data: demandRow(1), actor_user_id: null },
    key: 'crm:demand:dem_01:1',
    broken: { data: { entity_type: 'opportunity', entity_id: 'dem_01', before_data: null, after_data: demandRow(1) }, path: 'entity_type' },
  },
  'crm.demand.updated': {
    data: { entity_type: 'demand', entity_id: 'dem_01', before_data: demandRow(3), after_data: demandRow(4), actor_user_id: 'usr_5' },
    key: 'crm:demand:dem_01:4',
    broken: {
      data: {
        entity_type: 'demand',
        entity_id: 'dem_01',
        before_data: demandRow(3),
        after_data: { ...demandRow(4), contact_id: undefined },
      },
      path: 'after_data.contact_id',
    },
  },
  'crm.appointment_created': {
    data: {
      phone_number_id: '106540352242922',
      appointment: {
        id: 'apt_01',
        contact_id: CONTACT_ID,
        scheduled_at: '2026-11-25T14:00:00-03:00',
        note: null,
        created_at: '2026-11-22T10:00:00Z',
      },
      contact: { id: CONTACT_ID, wa_id: '5511999998888', phone: '5511999998888', profile_name: 'Maria Souza' },
    },
    key: 'crm:appointment:apt_01:created',
    broken: {
      data: {
        appointment: { id: 'apt_01', contact_id: CONTACT_ID, scheduled_at: 'next tuesday', created_at: '2026-11-22T10:00:00Z' },
        contact: { id: CONTACT_ID },
      },
      path: 'appointment.scheduled_at',
    },
  },
  'crm.appointment_updated': {
    data: { appointment: appointmentRow(3, 'confirmed'), before_data: appointmentRow(2), after_data: appointmentRow(3, 'confirmed') },
    key: 'appointment:apt_01:3',
    broken: {
      data: { appointment: { ...appointmentRow(3), revision: undefined }, before_data: appointmentRow(2), after_data: appointmentRow(3) },
      path: 'appointment.revision',
    },
  },
  'automation.journey_run.finished': {
    data: {
      status: 'stopped',
      stop_reason: 'appointment_cancelled',
      journey: { id: 'jr_welcome' },
      run: { id: 'run_42', occurrence_key: 'apt_01', opportunity_id: null, demand_id: null },
      contact: { id: CONTACT_ID },
    },
    key: 'journey_run:run_42:stopped',
    broken: {
      data: {
        status: 'cancelled',
        stop_reason: null,
        journey: { id: 'j' },
        run: { id: 'r', occurrence_key: null, opportunity_id: null, demand_id: null },
        contact: { id: CONTACT_ID },
      },
      path: 'status',
    },
  },
  'photoapp.message.received': {
    data: {
      account_id: '17841400000000000',
      message: {
        id: 'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQx',
        from: '6583920192837465',
        timestamp: '1763805600',
        type: 'text',
        text: { body: 'Tem no tamanho M?' },
        external_id: 'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQx',
      },
      contact: { user_id: '6583920192837465', username: 'maria.souza', profile_name: 'Maria Souza' },
    },
    key: 'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQx',
    broken: { data: { account_id: '1', message: { id: 'm', type: 'text', external_id: 'm' }, contact: {} }, path: 'contact.user_id' },
  },
  'webhook.test': {
    data: { message: 'This is a test event from the webhook platform.', sent_at: '2026-11-22T10:00:00.000Z' },
    refs: { endpoint_id: '0f8fad5b-d9cb-469f-a165-70867728950e' },
    key: 'test:0f8fad5b-d9cb-469f-a165-70867728950e',
    broken: { data: { message: 'x' }, path: 'sent_at' },
  },
};
