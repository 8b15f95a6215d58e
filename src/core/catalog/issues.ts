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

/** A provider notification that is malformed where it matters; `field` is the path of the bad part. */
export class ProviderPayloadError extends Error {
  override readonly name = 'ProviderPayloadError';
  constructor(
    /** e.g. `entry[0].changes[1].value.metadata.phone_number_id` */
    readonly field: string,
    detail: string,
  ) {
    super(`${field}: ${detail}`);
  }
}

/** Parses one part of a provider notification found at `path`, or throws ProviderPayloadError naming the field. */
export function parseProviderPart<T extends z.ZodType>(schema: T, value: unknown, path: string): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  throw new ProviderPayloadError(issue ? formatPath(issue.path, path) : path, issue?.message ?? 'invalid');
}
