import type { z } from 'zod';

/** `a.b[0].c` from a zod issue path. */
export function formatPath(path: readonly PropertyKey[], prefix = ''): string {
  let out = prefix;
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || '(root)';
}

/** One line naming the first failing field, e.g. `data.status: Invalid input: expected "sent"` (for 422 invalid_event). */
export function formatIssue(error: z.ZodError, prefix = ''): string {
  const issue = error.issues[0];
  if (!issue) return `${prefix || '(root)'}: invalid`;
  return `${formatPath(issue.path, prefix)}: ${issue.message}`;
}
