import { describe, expect, it } from 'vitest';
import { templateStatusUpdates } from '../../src/channels/inbound/chatapp-template-status.js';

const envelope = (changes: { field: string; value: unknown }[], id = '102290129340398') => ({
  object: 'whatsapp_business_account',
  entry: [{ id, time: 1795341600, changes }],
});

describe('templateStatusUpdates', () => {
  it('reads message_template_status_update: the waba from the entry, the id as a string, NONE as no reason', () => {
    const body = envelope([
      {
        field: 'message_template_status_update',
        value: {
          event: 'APPROVED',
          message_template_id: 1049912345678901,
          message_template_name: 'order_update',
          message_template_language: 'en_US',
          reason: 'NONE',
        },
      },
      { field: 'message_template_status_update', value: { event: 'REJECTED', message_template_id: '77', reason: 'INVALID_FORMAT' } },
      { field: 'messages', value: { statuses: [] } },
    ]);
    expect(templateStatusUpdates(body)).toEqual([
      { wabaId: '102290129340398', providerTemplateId: '1049912345678901', status: 'APPROVED', reason: null },
      { wabaId: '102290129340398', providerTemplateId: '77', status: 'REJECTED', reason: 'INVALID_FORMAT' },
    ]);
  });

  it('skips items it cannot use and bodies that are not the envelope', () => {
    expect(templateStatusUpdates(envelope([{ field: 'message_template_status_update', value: { event: 'PAUSED' } }]))).toEqual([]);
    expect(templateStatusUpdates(envelope([{ field: 'message_template_status_update', value: 'x' }]))).toEqual([]);
    expect(templateStatusUpdates({ nope: true })).toEqual([]);
    expect(templateStatusUpdates(null)).toEqual([]);
  });
});
