/**
 * The provider's `message_template_status_update` field: a template was approved, rejected,
 * paused... The stored template's status follows and NO event is emitted (SPEC 6.4); API users
 * read the status with GET /api/v1/templates.
 */
import { z } from 'zod';
import { updateTemplateStatus } from '../../db/templates.js';
import type { Queryable } from '../../db/pool.js';
import { logger } from '../../runtime/logger.js';

export const TEMPLATE_STATUS_FIELD = 'message_template_status_update';

export interface TemplateStatusUpdate {
  wabaId: string;
  providerTemplateId: string;
  status: string;
  reason: string | null;
}

const envelope = z.looseObject({
  entry: z.array(z.looseObject({ id: z.string(), changes: z.array(z.looseObject({ field: z.string(), value: z.unknown() })) })),
});
const value = z.looseObject({
  event: z.string().min(1),
  message_template_id: z.union([z.string().min(1), z.number()]).transform(String),
  reason: z.string().nullish(),
});

/** The status updates a notification carries (pure); unusable items are skipped, as other fields' are. */
export function templateStatusUpdates(body: unknown): TemplateStatusUpdate[] {
  const parsed = envelope.safeParse(body);
  if (!parsed.success) return [];
  return parsed.data.entry.flatMap((entry) =>
    entry.changes.flatMap((change) => {
      if (change.field !== TEMPLATE_STATUS_FIELD) return [];
      const v = value.safeParse(change.value);
      if (!v.success) return [];
      // The provider says NONE when there is no reason.
      const reason = v.data.reason && v.data.reason !== 'NONE' ? v.data.reason : null;
      return [{ wabaId: entry.id, providerTemplateId: v.data.message_template_id, status: v.data.event, reason }];
    }),
  );
}

/** Applies the notification's template status updates; returns how many stored templates changed. */
export async function applyTemplateStatusUpdates(db: Queryable, body: unknown): Promise<number> {
  let changed = 0;
  for (const u of templateStatusUpdates(body)) {
    const n = await updateTemplateStatus(db, u);
    if (n === 0) logger.info({ wabaId: u.wabaId, template: u.providerTemplateId }, 'template status update for a template not stored here');
    changed += n;
  }
  return changed;
}
