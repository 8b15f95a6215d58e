import { z } from 'zod';
import { define, entityRef, id, keyPart, nullableString, type EventDefinition } from './types.js';

export const automationJourneyRunFinished = define({
  type: 'automation.journey_run.finished',
  category: 'statuses',
  // Journeys run only for contacts of a primary-channel number.
  channel: 'chatapp',
  channelStamped: true,
  hasExternalId: false,
  description: 'An automation sequence run of a contact ended: completed, stopped or failed.',
  data: z.object({
    status: z.enum(['completed', 'stopped', 'failed']),
    /** e.g. manual, appointment_cancelled; null when not applicable */
    stop_reason: nullableString,
    journey: entityRef,
    run: z.object({ id, occurrence_key: nullableString, opportunity_id: nullableString, demand_id: nullableString }),
    contact: entityRef,
  }),
  idempotencyKey: (data) => `journey_run:${keyPart(data, 'run', 'id')}:${keyPart(data, 'status')}`,
});

export const automationEvents: readonly EventDefinition[] = [automationJourneyRunFinished];
