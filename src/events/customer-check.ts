/**
 * Whether a publish's `customer_id` is a Customer of its Account. The checks of concurrent
 * publishes go in one statement (a statement per publish was half of Postgres' transactions with
 * 100 Customers publishing), and a yes is remembered: a Customer never moves to another Account
 * and leaves only with its Account, whose API keys go with it, so no publish can reach this check
 * for a Customer that a remembered yes no longer fits. A no is asked again every time (a Customer
 * created a moment ago counts at once, and guessed ids cannot fill the memory). One per pool, as
 * storeEvent's batches are.
 */
import { areCustomersOfAccounts } from '../db/directory.js';
import type { Db } from '../db/pool.js';
import { createStatementBatcher } from '../runtime/statement-batcher.js';

/** Yeses remembered per process at most; the oldest goes first. */
const MAX_REMEMBERED = 50_000;

export type CustomerCheck = (accountId: string, customerId: string) => Promise<boolean>;

const checks = new WeakMap<Db, CustomerCheck>();

export function customerCheck(db: Db): CustomerCheck {
  let check = checks.get(db);
  if (!check) checks.set(db, (check = createCustomerCheck(db)));
  return check;
}

export function createCustomerCheck(db: Db, maxRemembered = MAX_REMEMBERED): CustomerCheck {
  const ask = createStatementBatcher((pairs: { accountId: string; customerId: string }[]) => areCustomersOfAccounts(db, pairs));
  const yes = new Set<string>();
  return async (accountId, customerId) => {
    const key = `${accountId} ${customerId}`;
    if (yes.has(key)) return true;
    if (!(await ask({ accountId, customerId }))) return false;
    if (yes.size >= maxRemembered) yes.delete(yes.values().next().value!);
    yes.add(key);
    return true;
  };
}
