/** The channel accounts an embedded signup connects (DECISIONS "Setup links"). */
import type { ChannelAccount } from './directory.js';
import type { Environment } from './events.js';
import type { Queryable } from './pool.js';

/**
 * Creates the chatapp channel account of a number, or refreshes it (display, waba, Customer) when
 * the same Account and environment already has it. A number another Account or the other
 * environment holds is left alone: undefined, and the caller reports it as not connected.
 */
export async function upsertConnectedNumber(
  db: Queryable,
  n: { accountId: string; customerId: string; environment: Environment; wabaId: string; phoneNumberId: string; display: string },
): Promise<ChannelAccount | undefined> {
  const { rows } = await db.query<ChannelAccount>(
    `INSERT INTO channel_accounts (account_id, customer_id, channel, display, phone_number_id, waba_id, environment)
     VALUES ($1, $2, 'chatapp', $3, $4, $5, $6)
     ON CONFLICT (channel, phone_number_id) WHERE phone_number_id IS NOT NULL DO UPDATE SET
       display = EXCLUDED.display, waba_id = EXCLUDED.waba_id, customer_id = EXCLUDED.customer_id
     WHERE channel_accounts.account_id = EXCLUDED.account_id AND channel_accounts.environment = EXCLUDED.environment
     RETURNING *`,
    [n.accountId, n.customerId, n.display, n.phoneNumberId, n.wabaId, n.environment],
  );
  return rows[0];
}
