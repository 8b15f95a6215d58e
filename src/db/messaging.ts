/** Contacts, conversations and messages: just enough directory to resolve events. */
import { transactionOn, withClient, type Db, type Queryable } from './pool.js';

export interface ContactFields {
  wa_id: string;
  user_id: string | null;
  username: string | null;
  phone: string | null;
  profile_name: string | null;
}

/** The contact of a channel account by wa_id, created or refreshed with the latest profile. */
export async function upsertContact(
  db: Queryable,
  accountId: string,
  channelAccountId: string,
  c: ContactFields,
): Promise<{ id: string; metadata: Record<string, unknown> }> {
  const { rows } = await db.query<{ id: string; metadata: Record<string, unknown> }>(
    `INSERT INTO contacts (account_id, channel_account_id, wa_id, user_id, username, phone, profile_name)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (channel_account_id, wa_id) DO UPDATE SET
       user_id = coalesce(EXCLUDED.user_id, contacts.user_id), username = coalesce(EXCLUDED.username, contacts.username),
       phone = coalesce(EXCLUDED.phone, contacts.phone), profile_name = coalesce(EXCLUDED.profile_name, contacts.profile_name)
     RETURNING id, metadata`,
    [accountId, channelAccountId, c.wa_id, c.user_id, c.username, c.phone, c.profile_name],
  );
  return rows[0]!;
}

export async function upsertConversation(db: Queryable, accountId: string, channelAccountId: string, contactId: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO conversations (account_id, channel_account_id, contact_id) VALUES ($1, $2, $3)
     ON CONFLICT (channel_account_id, contact_id) DO UPDATE SET contact_id = EXCLUDED.contact_id RETURNING id`,
    [accountId, channelAccountId, contactId],
  );
  return rows[0]!.id;
}

export interface MessageRow {
  id: string;
  account_id: string;
  channel_account_id: string;
  contact_id: string | null;
  conversation_id: string | null;
  external_id: string;
  direction: 'inbound' | 'outbound';
  type: string | null;
  status: string | null;
  to_recipient: string | null;
  content: Record<string, unknown> | null;
  created_at: Date;
}

/** Records an inbound message once; a redelivered notification finds the same row. */
export async function upsertInboundMessage(
  db: Queryable,
  m: { accountId: string; channelAccountId: string; contactId: string; conversationId: string; externalId: string; type: string },
): Promise<MessageRow> {
  const { rows } = await db.query<MessageRow>(
    `INSERT INTO messages (account_id, channel_account_id, contact_id, conversation_id, external_id, direction, type, status)
     VALUES ($1, $2, $3, $4, $5, 'inbound', $6, 'received')
     ON CONFLICT (channel_account_id, external_id) DO UPDATE SET type = EXCLUDED.type RETURNING *`,
    [m.accountId, m.channelAccountId, m.contactId, m.conversationId, m.externalId, m.type],
  );
  return rows[0]!;
}

/** A message the platform sent (API, panel, broadcast, sequence): only these get status events. */
export async function registerOutboundMessage(
  db: Queryable,
  m: {
    accountId: string;
    channelAccountId: string;
    contactId?: string | null;
    conversationId?: string | null;
    externalId: string;
    type?: string | null;
    /** `queued` for a send the provider just accepted; `accepted` when unset. */
    status?: string;
    toRecipient?: string | null;
    content?: Record<string, unknown> | null;
  },
): Promise<MessageRow> {
  const { rows } = await db.query<MessageRow>(
    `INSERT INTO messages (account_id, channel_account_id, contact_id, conversation_id, external_id, direction, type, status, to_recipient, content)
     VALUES ($1, $2, $3, $4, $5, 'outbound', $6, $7, $8, $9)
     ON CONFLICT (channel_account_id, external_id) DO UPDATE SET direction = messages.direction RETURNING *`,
    [
      m.accountId,
      m.channelAccountId,
      m.contactId ?? null,
      m.conversationId ?? null,
      m.externalId,
      m.type ?? null,
      m.status ?? 'accepted',
      m.toRecipient ?? null,
      m.content ? JSON.stringify(m.content) : null,
    ],
  );
  return rows[0]!;
}

export async function findMessage(db: Queryable, channelAccountId: string, externalId: string): Promise<MessageRow | undefined> {
  const { rows } = await db.query<MessageRow>(`SELECT * FROM messages WHERE channel_account_id = $1 AND external_id = $2`, [
    channelAccountId,
    externalId,
  ]);
  return rows[0];
}

/**
 * The message a status is about, when the platform sent it (API, panel, broadcast, sequence).
 * Statuses of any other message produce no event (SPEC 6.3, 6.4): the provider ingress and the
 * publish API both ask here.
 */
export async function findRegisteredMessage(db: Queryable, channelAccountId: string, externalId: string): Promise<MessageRow | undefined> {
  const message = await findMessage(db, channelAccountId, externalId);
  return message?.direction === 'outbound' ? message : undefined;
}

/**
 * Records the end of a free-entry-point window (SPEC 6.3) on the conversation of a sent
 * message: its own conversation, else the one with its contact, else with the contact the
 * status names. A redelivered older notification never moves the end back.
 */
export async function recordFepExpiry(db: Queryable, m: MessageRow, recipientWaId: string | null, expiresAt: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE conversations SET fep_expires_at = greatest(fep_expires_at, $5::timestamptz)
     WHERE id = coalesce($1::uuid, (
       SELECT c.id FROM conversations c
       WHERE c.channel_account_id = $2 AND c.contact_id = coalesce($3::uuid, (SELECT id FROM contacts WHERE channel_account_id = $2 AND wa_id = $4))
     ))`,
    [m.conversation_id, m.channel_account_id, m.contact_id, recipientWaId, expiresAt],
  );
  return rowCount === 1;
}

/** Holders of a message's status lock per pool: the rest of the pool stays free for what they wait on (storeEvent). */
const statusLockHolders = new WeakMap<Db, { held: number; waiting: Array<() => void> }>();

/**
 * Runs `fn` holding the status of message `id` locked (NO KEY: rows referencing the message may
 * still be written meanwhile), with its current status and a way to advance it in the same
 * transaction; undefined, without `fn`, when the message is gone. Racing statuses of one message
 * take turns, across processes, so the check, the stored event and the advance happen as one. A
 * holder keeps a connection while `fn` stores on others: at most half of the pool holds, so those
 * others are always there.
 */
export async function withMessageStatusLock<T>(
  db: Db,
  id: string,
  fn: (current: string | null, advance: (status: string) => Promise<void>) => Promise<T>,
): Promise<T | undefined> {
  let gate = statusLockHolders.get(db);
  if (!gate) statusLockHolders.set(db, (gate = { held: 0, waiting: [] }));
  const limit = Math.max(1, Math.floor((db.options.max ?? 10) / 2));
  while (gate.held >= limit) await new Promise<void>((r) => gate.waiting.push(r));
  gate.held++;
  try {
    return await withClient(db, (client) =>
      transactionOn(client, async (c) => {
        const { rows } = await c.query<{ status: string | null }>(`SELECT status FROM messages WHERE id = $1 FOR NO KEY UPDATE`, [id]);
        const advance = async (status: string) => void (await c.query(`UPDATE messages SET status = $2 WHERE id = $1`, [id, status]));
        return rows[0] ? fn(rows[0].status, advance) : undefined;
      }),
    );
  } finally {
    gate.held--;
    gate.waiting.shift()?.();
  }
}

/** The environment of a contact of the account (its channel account's), or undefined when there is no such contact. */
export async function getContactEnvironment(db: Queryable, accountId: string, contactId: string): Promise<'live' | 'sandbox' | undefined> {
  const { rows } = await db.query<{ environment: 'live' | 'sandbox' }>(
    `SELECT ca.environment FROM contacts c JOIN channel_accounts ca ON ca.id = c.channel_account_id WHERE c.id = $1 AND c.account_id = $2`,
    [contactId, accountId],
  );
  return rows[0]?.environment;
}

/**
 * Removes a contact of the account in `environment` (its channel account's) with its messages and
 * conversations; true when it existed there. A contact of the other environment is left alone.
 */
export async function deleteContact(
  db: Queryable,
  accountId: string,
  environment: 'live' | 'sandbox',
  contactId: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `DELETE FROM contacts c USING channel_accounts ca
     WHERE c.id = $1 AND c.account_id = $2 AND ca.id = c.channel_account_id AND ca.environment = $3`,
    [contactId, accountId, environment],
  );
  return rowCount === 1;
}

export interface IncomingMessageRows {
  contactId: string;
  contactMetadata: Record<string, unknown>;
  conversationId: string;
  /** The platform's message row: created for an inbound message, found (if any) for an echo. */
  messageId: string | null;
}

/**
 * The directory rows a message arriving through a provider implies: its contact (created or
 * refreshed), the conversation, and, for an inbound message, the message itself.
 */
export async function recordIncomingMessage(
  db: Queryable,
  ca: { id: string; account_id: string },
  contact: ContactFields,
  m: { externalId: string; type: string; inbound: boolean },
): Promise<IncomingMessageRows> {
  const row = await upsertContact(db, ca.account_id, ca.id, contact);
  const conversationId = await upsertConversation(db, ca.account_id, ca.id, row.id);
  const message = m.inbound
    ? await upsertInboundMessage(db, {
        accountId: ca.account_id,
        channelAccountId: ca.id,
        contactId: row.id,
        conversationId,
        externalId: m.externalId,
        type: m.type,
      })
    : await findMessage(db, ca.id, m.externalId);
  return { contactId: row.id, contactMetadata: row.metadata, conversationId, messageId: message?.id ?? null };
}

/** A provider notification that stored nothing, kept for the operator (it was answered 200). */
export async function recordProviderRejection(db: Queryable, r: { provider: string; reason: string; body: string }): Promise<void> {
  await db.query(`INSERT INTO provider_rejections (provider, reason, body) VALUES ($1, $2, $3)`, [r.provider, r.reason, r.body]);
}
