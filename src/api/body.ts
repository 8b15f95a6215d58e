import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { findUnstorableText, UNSTORABLE_REASON } from '../core/storable-text.js';
import { DomainError } from '../core/domain-error.js';
import { isRecord } from '../core/is-record.js';
import { fieldCode } from './validation.js';

/** Every body's limit (256 KiB), unless its route names a larger one (a broadcast's recipients). */
export const DEFAULT_BODY_LIMIT_BYTES = 256 * 1024;

/** The exact request bytes: signatures are checked over these, never over re-serialized JSON. */
export async function readRawBody(ctx: Context, limitBytes = DEFAULT_BODY_LIMIT_BYTES): Promise<Buffer> {
  if (ctx.state.rawBody) return ctx.state.rawBody as Buffer;
  const raw = await getRawBody(ctx.req, { limit: limitBytes, length: ctx.request.length });
  ctx.state.rawBody = raw;
  return raw;
}

/**
 * The JSON body; an empty body reads as `{}` so bodiless POSTs and PATCHes are fine. Every route
 * takes an object: any other JSON (`null`, an array, a number, a string, a boolean) is 422
 * invalid_request here, for every route at once, before a route reads a field of it. A body
 * with text Postgres cannot store is 422 here too: `code` when the route has one for all its
 * fields (invalid_event), else the failing field's code (invalid_url...).
 */
export async function readJson(ctx: Context, code?: string, opts: { limitBytes?: number } = {}): Promise<unknown> {
  const raw = await readRawBody(ctx, opts.limitBytes);
  if (raw.length === 0) return {};
  const type = ctx.request.type;
  if (type && type !== 'application/json' && !type.endsWith('+json')) {
    throw new DomainError(415, 'unsupported_media_type', 'request body must be application/json');
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DomainError(400, 'invalid_json', 'request body is not valid JSON');
  }
  if (!isRecord(body)) throw new DomainError(422, 'invalid_request', 'request body must be a JSON object');
  // Valid JSON can only carry a NUL or a lone surrogate as a \u escape (raw control characters
  // are invalid JSON, and bytes that are not UTF-8 decode as U+FFFD): without one, skip the walk.
  const field = raw.includes('\\u') ? findUnstorableText(body) : undefined;
  if (field !== undefined) throw new DomainError(422, code ?? fieldCode(field), `${field}: ${UNSTORABLE_REASON}`);
  return body;
}
