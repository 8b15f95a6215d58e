/**
 * The Free-plan forwarding cap (SPEC 8, DECISIONS): 300 received messages per Account and
 * UTC month, warnings at 240 and 300. Pure: the clock is passed in.
 */
export const FREE_PLAN_MONTHLY_LIMIT = 300;
export const WARNING_THRESHOLDS = [240, 300] as const;
export const TRIAL_DAYS = 14;

/** Free accounts created up to this instant get the limit only from LEGACY_LIMIT_START (rule 7). */
const NEW_ACCOUNTS_FROM = Date.UTC(2026, 9, 1); // 2026-10-01T00:00Z
const LEGACY_LIMIT_START = Date.UTC(2026, 10, 1); // 2026-11-01T00:00Z

export type Plan = 'free' | 'trial' | 'paid';

/** Whether the cap applies to this Account at `now`. A trial past its 14 days is treated as free. */
export function capApplies(plan: Plan, accountCreatedAt: Date, now: Date): boolean {
  if (plan === 'paid') return false;
  if (plan === 'trial' && now.getTime() < accountCreatedAt.getTime() + TRIAL_DAYS * 86_400_000) return false;
  const limitStart = accountCreatedAt.getTime() < NEW_ACCOUNTS_FROM ? LEGACY_LIMIT_START : accountCreatedAt.getTime();
  return now.getTime() >= limitStart;
}

/** The first day of the UTC month of `now`, as `YYYY-MM-01`. */
export function usageMonth(now: Date): string {
  return `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/** After counting an event as the `count`-th of its month: limited or not, and which warning it crosses. */
export function judgeCount(count: number): { limited: boolean; warning: (typeof WARNING_THRESHOLDS)[number] | null } {
  const warning = WARNING_THRESHOLDS.find((t) => t === count) ?? null;
  return { limited: count > FREE_PLAN_MONTHLY_LIMIT, warning };
}
