import type { Context, Next } from 'koa';
import type { z } from 'zod';
import { findUnstorableText, UNSTORABLE_REASON } from '../core/storable-text.js';
import { DomainError } from '../core/domain-error.js';

/** Which error code a failing field maps to (SPEC 7); other fields give `invalid_request`. */
const FIELD_CODES: Record<string, string> = {
  url: 'invalid_url',
  events: 'invalid_events',
  secret: 'invalid_secret',
  customer_id: 'invalid_customer_id',
  rate_limit: 'invalid_rate_limit',
  description: 'invalid_description',
};

/** The error code of a body field given as a path (`url`, `headers.Authorization`, `events[0]`). */
export function fieldCode(path: string): string {
  return FIELD_CODES[/^[^.[]*/.exec(path)![0]] ?? 'invalid_request';
}

/** Query parameters whose routes already have a code for a bad value. */
const QUERY_CODES: Record<string, string> = { after: 'invalid_cursor', before: 'invalid_cursor', status: 'invalid_status' };

/**
 * Path and query text Postgres cannot store (NUL, unpaired surrogates) is 422 before any route
 * runs, so no route needs its own check. `limit` is exempt: it is only ever parsed as a number,
 * and an invalid one falls back to the default (SPEC 6.5 rule 3).
 */
export async function refuseUnstorableInput(ctx: Context, next: Next): Promise<void> {
  let path = ctx.path;
  try {
    path = decodeURIComponent(ctx.path);
  } catch {
    // Malformed escapes are not decoded by the router either: the raw path is what routes see.
  }
  if (findUnstorableText(path) !== undefined) throw new DomainError(422, 'invalid_request', `path ${UNSTORABLE_REASON}`);
  const { limit: _limit, ...query } = ctx.query;
  const field = findUnstorableText(query);
  if (field !== undefined)
    throw new DomainError(422, QUERY_CODES[/^[^.[]*/.exec(field)![0]] ?? 'invalid_request', `${field}: ${UNSTORABLE_REASON}`);
  await next();
}

/**
 * `code`, when given, is the error code of every failing field (a route with one code for its
 * whole body). `body` is an object already: readJson refuses any other JSON.
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, code?: string): z.infer<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    throw new DomainError(422, 'invalid_request', `unknown field: ${issue.keys.join(', ')}`);
  }
  throw new DomainError(422, code ?? fieldCode(String(issue.path[0] ?? '')), field ? `${field}: ${issue.message}` : issue.message);
}
