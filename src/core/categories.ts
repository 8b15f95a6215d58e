/** Subscription categories of SPEC 2.2. */
export const CATEGORIES = ['messages', 'statuses', 'crm', 'account', 'app_messages'] as const;
export type Category = (typeof CATEGORIES)[number];

/** Keeps the known categories of a subscription request, once each, in catalog order; any other value, of any type, is dropped. */
export function normalizeCategories(values: readonly unknown[]): Category[] {
  return CATEGORIES.filter((c) => values.includes(c));
}
