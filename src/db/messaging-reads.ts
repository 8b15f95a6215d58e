/**
 * Conversations and messages as the API lists them (GET /api/v1/conversations, /messages). Like
 * contacts they have no environment of their own: their channel account's, joined here.
 */
import type { PageKey } from '../core/paging.js';
import type { Scope } from './contacts.js';
import { inPageOrder, keyset, pageKeyColumn } from './keyset.js';
import type { Queryable } from './pool.js';

export interface ConversationListRow {
  id: string;
  channel_account_id: string;
  contact_id: string;
  fep_expires_at: Date | null;
  last_message_at: Date | null;
  created_at: Date;
  page_key: PageKey;
}

export interface MessageListRow {
  id: string;
  external_id: string;
  channel_account_id: string;
  contact_id: string | null;
  conversation_id: string | null;
  direction: 'inbound' | 'outbound';
  type: string | null;
  status: string | null;
  created_at: Date;
  page_key: PageKey;
}

type Page = { limit: number; after?: PageKey; before?: PageKey };

/** Newest first by (created_at, id) of `alias`, with the scope's Account and environment and the given equality filters. */
async function pageOf<T>(
  db: Queryable,
  select: string,
  alias: string,
  scope: Scope,
  filters: Record<string, string | undefined>,
  page: Page,
): Promise<T[]> {
  const params: unknown[] = [scope.accountId, scope.environment, page.limit + 1];
  const where = [`${alias}.account_id = $1`, 'ca.environment = $2'];
  for (const [column, value] of Object.entries(filters)) {
    if (value === undefined) continue;
    params.push(value);
    where.push(`${alias}.${column} = $${params.length}`);
  }
  const ks = keyset(page, params, `${alias}.`, 'newest-first');
  if (ks.clause) where.push(ks.clause);
  const { rows } = await db.query(
    `${select} WHERE ${where.join(' AND ')} ORDER BY ${alias}.created_at ${ks.order}, ${alias}.id ${ks.order} LIMIT $3`,
    params,
  );
  return inPageOrder(rows as T[], ks);
}

export function listConversations(
  db: Queryable,
  scope: Scope,
  filter: { contactId?: string; channelAccountId?: string },
  page: Page,
): Promise<ConversationListRow[]> {
  return pageOf(
    db,
    `SELECT v.id, v.channel_account_id, v.contact_id, v.fep_expires_at, v.created_at,
       (SELECT max(m.created_at) FROM messages m WHERE m.conversation_id = v.id) AS last_message_at,
       ${pageKeyColumn('v')}
     FROM conversations v JOIN channel_accounts ca ON ca.id = v.channel_account_id`,
    'v',
    scope,
    { contact_id: filter.contactId, channel_account_id: filter.channelAccountId },
    page,
  );
}

export function listMessages(
  db: Queryable,
  scope: Scope,
  filter: { conversationId?: string; contactId?: string; channelAccountId?: string; direction?: string },
  page: Page,
): Promise<MessageListRow[]> {
  return pageOf(
    db,
    `SELECT m.id, m.external_id, m.channel_account_id, m.contact_id, m.conversation_id, m.direction, m.type, m.status, m.created_at,
       ${pageKeyColumn('m')}
     FROM messages m JOIN channel_accounts ca ON ca.id = m.channel_account_id`,
    'm',
    scope,
    {
      conversation_id: filter.conversationId,
      contact_id: filter.contactId,
      channel_account_id: filter.channelAccountId,
      direction: filter.direction,
    },
    page,
  );
}
