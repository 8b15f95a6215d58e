/**
 * A provider notification split into its items, each a notification of its own, so that one
 * invalid item costs only itself: the valid ones are stored, each invalid one is kept in
 * provider_rejections with a reason naming it. Only a malformed envelope refuses the whole.
 */
import { parseProviderPart } from '../../core/catalog/issues.js';
import { isRecord } from '../../core/is-record.js';
import { toStorableText } from '../../core/storable-text.js';
import { recordProviderRejections } from '../../db/messaging.js';
import type { Queryable } from '../../db/pool.js';
import { logger } from '../../runtime/logger.js';
import { RejectedNotification } from './inbound-deps.js';
import { providerEnvelopeSchema } from './chatapp-facts.js';
import { photoappEnvelopeSchema } from './photoapp-facts.js';

export interface NotificationItem {
  /** Where the item is in the original notification, e.g. `entry[1].changes[0].value.messages[2]`. */
  at: string;
  /** A notification holding this item only, in the provider's shape: mapped like any notification. */
  body: Record<string, unknown>;
  /** Rewrites a path of `body` (`entry[0]...`) in a message into the original notification's. */
  relocate(message: string): string;
}

export interface RejectedItem {
  item: NotificationItem;
  reason: string;
}

type Json = Record<string, unknown>;

/** The item lists of the chatapp fields that carry several items in one change. */
const CHATAPP_ITEM_LISTS: Record<string, readonly string[]> = {
  messages: ['messages', 'statuses'],
  smb_message_echoes: ['message_echoes'],
};

function item(at: string, body: Json, from: [string, string][]): NotificationItem {
  return {
    at,
    body,
    relocate: (message) => from.reduce((m, [single, original]) => m.split(single).join(original), message),
  };
}

/**
 * One notification per message, status and echo of a chatapp notification, and one per other
 * change. Throws ProviderPayloadError when the envelope itself is malformed.
 */
export function splitChatappNotification(raw: unknown): NotificationItem[] {
  parseProviderPart(providerEnvelopeSchema, raw, '');
  const body = raw as Json & { entry: (Json & { changes: Json[] })[] };
  const items: NotificationItem[] = [];
  body.entry.forEach((entry, ei) => {
    entry.changes.forEach((change, ci) => {
      const at = `entry[${ei}].changes[${ci}]`;
      const one = (value: unknown): Json => ({ ...body, entry: [{ ...entry, changes: [{ ...change, value }] }] });
      const value = change.value;
      const lists = (CHATAPP_ITEM_LISTS[String(change.field)] ?? []).filter((k) => isRecord(value) && Array.isArray(value[k]));
      const count = lists.reduce((n, k) => n + ((value as Json)[k] as unknown[]).length, 0);
      if (count === 0) {
        items.push(item(at, one(value), [['entry[0].changes[0]', at]]));
        return;
      }
      const rest = Object.fromEntries(Object.entries(value as Json).filter(([k]) => !lists.includes(k)));
      for (const list of lists) {
        ((value as Json)[list] as unknown[]).forEach((entryItem, i) => {
          items.push(
            item(`${at}.value.${list}[${i}]`, one({ ...rest, [list]: [entryItem] }), [
              [`entry[0].changes[0].value.${list}[0]`, `${at}.value.${list}[${i}]`],
              ['entry[0].changes[0]', at],
            ]),
          );
        });
      }
    });
  });
  return items;
}

/**
 * One notification per `messaging` item of a photoapp notification (standby items and other
 * changes produce nothing). Throws ProviderPayloadError when the envelope itself is malformed.
 */
export function splitPhotoappNotification(raw: unknown): NotificationItem[] {
  parseProviderPart(photoappEnvelopeSchema, raw, '');
  const body = raw as Json & { entry: (Json & { messaging?: unknown[] })[] };
  const items: NotificationItem[] = [];
  body.entry.forEach((entry, ei) => {
    (entry.messaging ?? []).forEach((messagingItem, mi) => {
      const at = `entry[${ei}].messaging[${mi}]`;
      const { standby: _standby, changes: _changes, ...rest } = entry;
      const one = { ...body, entry: [{ ...rest, messaging: [messagingItem] }] };
      items.push(item(at, one, [['entry[0].messaging[0]', at]]));
    });
  });
  return items;
}

/**
 * Splits a notification and plans each item on its own: what the valid items make, and each
 * invalid item with its reason. Only an unusable envelope refuses the whole notification.
 */
export async function planEachItem<P>(
  body: unknown,
  split: (raw: unknown) => NotificationItem[],
  planItem: (item: NotificationItem) => Promise<P[]>,
): Promise<{ planned: P[]; rejected: RejectedItem[] }> {
  let items: NotificationItem[];
  try {
    items = split(body);
  } catch (err) {
    throw new RejectedNotification((err as Error).message);
  }
  const planned: P[] = [];
  const rejected: RejectedItem[] = [];
  for (const item of items) {
    try {
      planned.push(...(await planItem(item)));
    } catch (err) {
      if (!(err instanceof RejectedNotification)) throw err;
      rejected.push({ item, reason: err.message });
    }
  }
  return { planned, rejected };
}

/** Keeps each refused item for the operator, all in one statement: the reason names it, the body is the item's own notification. */
export async function recordRejectedItems(db: Queryable, provider: 'chatapp' | 'photoapp', rejected: RejectedItem[]): Promise<void> {
  await recordProviderRejections(
    db,
    rejected.map(({ item: refused, reason }) => ({
      provider,
      reason: toStorableText(reason),
      body: toStorableText(JSON.stringify(refused.body)),
    })),
  );
  for (const { reason } of rejected) logger.warn({ channel: provider, reason }, 'provider notification item rejected');
}
