/** Subscription categories of SPEC 2.2. */
export const CATEGORIES = ['messages', 'statuses', 'crm', 'account', 'app_messages'] as const;
export type Category = (typeof CATEGORIES)[number];

/** Keeps the known categories of a subscription request, once each, in catalog order. */
export function normalizeCategories(values: readonly string[]): Category[] {
  return CATEGORIES.filter((c) => values.includes(c));
}
