import type { AccountId } from '../core/ids.js';
/** Accounts, customers and channel accounts: the origin chain events resolve through. */
import type { Queryable } from './pool.js';

export type Plan = 'free' | 'trial' | 'paid';

export interface Account {
  id: AccountId;
  name: string;
  owner_email: string;
  plan: Plan;
  created_at: Date;
}

export interface Customer {
  id: string;
  account_id: AccountId;
  name: string;
  created_at: Date;
}

export interface ChannelAccount {
  id: string;
  account_id: AccountId;
  customer_id: string | null;
  channel: 'chatapp' | 'photoapp';
  display: string;
  phone_number_id: string | null;
  waba_id: string | null;
  /** The provider's id of a photoapp business account. */
  provider_account_id: string | null;
  environment: 'live' | 'sandbox';
  created_at: Date;
}

export async function createAccount(
  db: Queryable,
  a: { name: string; ownerEmail: string; plan?: Plan; createdAt?: Date },
): Promise<Account> {
  const { rows } = await db.query<Account>(
    `INSERT INTO accounts (name, owner_email, plan, created_at) VALUES ($1, $2, $3, coalesce($4, now())) RETURNING *`,
    [a.name, a.ownerEmail, a.plan ?? 'free', a.createdAt ?? null],
  );
  return rows[0]!;
}

export async function getAccount(db: Queryable, id: string): Promise<Account | undefined> {
  const { rows } = await db.query<Account>(`SELECT * FROM accounts WHERE id = $1`, [id]);
  return rows[0];
}

export async function createCustomer(db: Queryable, c: { accountId: string; name: string }): Promise<Customer> {
  const { rows } = await db.query<Customer>(`INSERT INTO customers (account_id, name) VALUES ($1, $2) RETURNING *`, [c.accountId, c.name]);
  return rows[0]!;
}

/** A customer only when it belongs to the account: the tenant boundary for customer filters. */
export async function getCustomerOfAccount(db: Queryable, accountId: string, customerId: string): Promise<Customer | undefined> {
  const { rows } = await db.query<Customer>(`SELECT * FROM customers WHERE id = $1 AND account_id = $2`, [customerId, accountId]);
  return rows[0];
}

/**
 * Which of `pairs` (an Account and a Customer id) name a Customer of that Account, in one
 * statement: true or false for each pair, in order.
 */
export async function areCustomersOfAccounts(
  db: Queryable,
  pairs: readonly { accountId: string; customerId: string }[],
): Promise<boolean[]> {
  const { rows } = await db.query<{ i: string }>({
    name: 'are_customers_of_accounts',
    text: `SELECT r.i FROM unnest($1::uuid[], $2::uuid[]) WITH ORDINALITY AS r(account_id, customer_id, i)
     JOIN customers c ON c.id = r.customer_id AND c.account_id = r.account_id`,
    values: [pairs.map((p) => p.accountId), pairs.map((p) => p.customerId)],
  });
  const found = new Set(rows.map((r) => Number(r.i) - 1));
  return pairs.map((_, i) => found.has(i));
}

export async function createChannelAccount(
  db: Queryable,
  c: {
    accountId: string;
    customerId?: string | null;
    channel: ChannelAccount['channel'];
    display: string;
    phoneNumberId?: string | null;
    wabaId?: string | null;
    providerAccountId?: string | null;
    environment?: ChannelAccount['environment'];
  },
): Promise<ChannelAccount> {
  const { rows } = await db.query<ChannelAccount>(
    `INSERT INTO channel_accounts (account_id, customer_id, channel, display, phone_number_id, waba_id, provider_account_id, environment)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [
      c.accountId,
      c.customerId ?? null,
      c.channel,
      c.display,
      c.phoneNumberId ?? null,
      c.wabaId ?? null,
      c.providerAccountId ?? null,
      c.environment ?? 'live',
    ],
  );
  return rows[0]!;
}

export async function getChannelAccountOfAccount(db: Queryable, accountId: string, id: string): Promise<ChannelAccount | undefined> {
  const { rows } = await db.query<ChannelAccount>(`SELECT * FROM channel_accounts WHERE id = $1 AND account_id = $2`, [id, accountId]);
  return rows[0];
}

/** The channel account of a provider phone number id (unique per channel). */
export async function findChannelAccountByPhoneNumber(
  db: Queryable,
  channel: ChannelAccount['channel'],
  phoneNumberId: string,
): Promise<ChannelAccount | undefined> {
  const { rows } = await db.query<ChannelAccount>(`SELECT * FROM channel_accounts WHERE channel = $1 AND phone_number_id = $2`, [
    channel,
    phoneNumberId,
  ]);
  return rows[0];
}

export async function findChannelAccountByProviderId(
  db: Queryable,
  channel: ChannelAccount['channel'],
  providerAccountId: string,
): Promise<ChannelAccount | undefined> {
  const { rows } = await db.query<ChannelAccount>(`SELECT * FROM channel_accounts WHERE channel = $1 AND provider_account_id = $2`, [
    channel,
    providerAccountId,
  ]);
  return rows[0];
}

/** The channel accounts of many provider account ids in one statement, by provider account id (ids with none are absent). */
export async function findChannelAccountsByProviderIds(
  db: Queryable,
  channel: ChannelAccount['channel'],
  providerAccountIds: readonly string[],
): Promise<Map<string, ChannelAccount>> {
  const found = new Map<string, ChannelAccount>();
  if (providerAccountIds.length === 0) return found;
  const { rows } = await db.query<ChannelAccount & { provider_account_id: string }>(
    `SELECT * FROM channel_accounts WHERE channel = $1 AND provider_account_id = ANY($2::text[])`,
    [channel, [...new Set(providerAccountIds)]],
  );
  for (const row of rows) if (!found.has(row.provider_account_id)) found.set(row.provider_account_id, row);
  return found;
}

/** An Account that holds a business account, and the Customer owning it there (null when none). */
export interface WabaOwner {
  /** The Account's channel account on that waba, of `environment` first, oldest first. */
  channelAccount: ChannelAccount;
  customerId: string | null;
}

/**
 * Every Account holding business account `wabaId` (only `accountId` when given), each with its
 * Customer: the oldest channel account of `environment` on that waba that has one (SPEC 6.3). The
 * one resolution of account-health events, from the provider and from the publish API alike.
 */
export async function findWabaOwners(
  db: Queryable,
  wabaId: string,
  environment: ChannelAccount['environment'],
  accountId?: string,
): Promise<WabaOwner[]> {
  const { rows } = await db.query<ChannelAccount & { owner_customer_id: string | null }>(
    `SELECT DISTINCT ON (ca.account_id) ca.*,
       (SELECT o.customer_id FROM channel_accounts o
        WHERE o.account_id = ca.account_id AND o.environment = $2 AND o.waba_id = $1 AND o.customer_id IS NOT NULL
        ORDER BY o.created_at, o.id LIMIT 1) AS owner_customer_id
     FROM channel_accounts ca
     WHERE ca.waba_id = $1 AND ($3::uuid IS NULL OR ca.account_id = $3)
     ORDER BY ca.account_id, (ca.environment = $2) DESC, ca.created_at, ca.id`,
    [wabaId, environment, accountId ?? null],
  );
  return rows.map(({ owner_customer_id, ...channelAccount }) => ({ channelAccount, customerId: owner_customer_id }));
}

/** The Customer owning a business account in one Account and environment (findWabaOwners). */
export async function findCustomerOfWaba(
  db: Queryable,
  accountId: string,
  environment: ChannelAccount['environment'],
  wabaId: string,
): Promise<string | undefined> {
  return (await findWabaOwners(db, wabaId, environment, accountId))[0]?.customerId ?? undefined;
}

export async function findChannelAccountByDisplay(db: Queryable, wabaId: string, display: string): Promise<ChannelAccount | undefined> {
  const digits = display.replace(/\D/g, '');
  const { rows } = await db.query<ChannelAccount>(
    `SELECT * FROM channel_accounts WHERE waba_id = $1 AND regexp_replace(display, '\\D', '', 'g') = $2 LIMIT 1`,
    [wabaId, digits],
  );
  return rows[0];
}

/** Removes an Account and, by cascade, everything it owns: keys, endpoints, deliveries, the stream. */
export async function deleteAccount(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM accounts WHERE id = $1`, [id]);
  return rowCount === 1;
}

/** Locks a channel account for its deletion; returns its Account, or undefined when it does not exist. */
export async function lockChannelAccount(tx: Queryable, id: string): Promise<{ account_id: string } | undefined> {
  const { rows } = await tx.query<{ account_id: string }>('SELECT account_id FROM channel_accounts WHERE id = $1 FOR UPDATE', [id]);
  return rows[0];
}

export async function deleteChannelAccount(tx: Queryable, id: string): Promise<void> {
  await tx.query('DELETE FROM channel_accounts WHERE id = $1', [id]);
}

/** The oldest Account, if any: `npm start` bootstraps one on an empty database. */
export async function firstAccountId(db: Queryable): Promise<string | undefined> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM accounts ORDER BY created_at, id LIMIT 1');
  return rows[0]?.id;
}
