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
  await recordProviderRejections(db, [r]);
}

/** Several refused notifications (or items of one) kept for the operator in one statement. */
export async function recordProviderRejections(
  db: Queryable,
  rs: readonly { provider: string; reason: string; body: string }[],
): Promise<void> {
  if (rs.length === 0) return;
  await db.query(`INSERT INTO provider_rejections (provider, reason, body) SELECT * FROM unnest($1::text[], $2::text[], $3::text[])`, [
    rs.map((r) => r.provider),
    rs.map((r) => r.reason),
    rs.map((r) => r.body),
  ]);
}

/** One inbound message of a provider notification, for `recordIncomingMessages`. */
export interface IncomingMessage {
  ca: { id: string; account_id: string };
  contact: ContactFields;
  externalId: string;
  type: string;
}

/**
 * `recordIncomingMessage` for many inbound messages in one statement: the contacts (created or
 * refreshed, each once: the latest of its messages' fields, as sequential upserts would leave
 * them), their conversations and the messages (each once). Answers the rows of each message, in
 * the order given. Rows are written in key order, so two notifications racing for the same
 * contacts lock them in the same order.
 */
export async function recordIncomingMessages(db: Queryable, ms: readonly IncomingMessage[]): Promise<IncomingMessageRows[]> {
  if (ms.length === 0) return [];
  const col = <T>(f: (m: IncomingMessage) => T) => ms.map(f);
  const { rows } = await db.query<{
    n: string;
    contact_id: string;
    metadata: Record<string, unknown>;
    conversation_id: string;
    message_id: string;
  }>(
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
         WITH ORDINALITY AS i(account_id, channel_account_id, wa_id, user_id, username, phone, profile_name, external_id, type, n)
     ),
     contact_rows AS (
       INSERT INTO contacts (account_id, channel_account_id, wa_id, user_id, username, phone, profile_name)
       SELECT DISTINCT ON (channel_account_id, wa_id) account_id, channel_account_id, wa_id, user_id, username, phone, profile_name
       FROM input ORDER BY channel_account_id, wa_id, n DESC
       ON CONFLICT (channel_account_id, wa_id) DO UPDATE SET
         user_id = coalesce(EXCLUDED.user_id, contacts.user_id), username = coalesce(EXCLUDED.username, contacts.username),
         phone = coalesce(EXCLUDED.phone, contacts.phone), profile_name = coalesce(EXCLUDED.profile_name, contacts.profile_name)
       RETURNING id, account_id, channel_account_id, wa_id, metadata
     ),
     conversation_rows AS (
       INSERT INTO conversations (account_id, channel_account_id, contact_id)
       SELECT account_id, channel_account_id, id FROM contact_rows ORDER BY channel_account_id, id
       ON CONFLICT (channel_account_id, contact_id) DO UPDATE SET contact_id = EXCLUDED.contact_id
       RETURNING id, channel_account_id, contact_id
     ),
     message_rows AS (
       INSERT INTO messages (account_id, channel_account_id, contact_id, conversation_id, external_id, direction, type, status)
       SELECT DISTINCT ON (i.channel_account_id, i.external_id) i.account_id, i.channel_account_id, c.id, v.id, i.external_id, 'inbound', i.type, 'received'
       FROM input i
       JOIN contact_rows c ON c.channel_account_id = i.channel_account_id AND c.wa_id = i.wa_id
       JOIN conversation_rows v ON v.channel_account_id = i.channel_account_id AND v.contact_id = c.id
       ORDER BY i.channel_account_id, i.external_id, i.n DESC
       ON CONFLICT (channel_account_id, external_id) DO UPDATE SET type = EXCLUDED.type
       RETURNING id, channel_account_id, external_id
     )
     SELECT i.n, c.id AS contact_id, c.metadata, v.id AS conversation_id, m.id AS message_id
     FROM input i
     JOIN contact_rows c ON c.channel_account_id = i.channel_account_id AND c.wa_id = i.wa_id
     JOIN conversation_rows v ON v.channel_account_id = i.channel_account_id AND v.contact_id = c.id
     JOIN message_rows m ON m.channel_account_id = i.channel_account_id AND m.external_id = i.external_id
     ORDER BY i.n`,
    [
      col((m) => m.ca.account_id),
      col((m) => m.ca.id),
      col((m) => m.contact.wa_id),
      col((m) => m.contact.user_id),
      col((m) => m.contact.username),
      col((m) => m.contact.phone),
      col((m) => m.contact.profile_name),
      col((m) => m.externalId),
      col((m) => m.type),
    ],
  );
  return rows.map((r) => ({
    contactId: r.contact_id,
    contactMetadata: r.metadata,
    conversationId: r.conversation_id,
    messageId: r.message_id,
  }));
}
