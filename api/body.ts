import type { Context } from 'koa';
import getRawBody from 'raw-body';
import { ApiError } from './errors.js';

const LIMIT = '256kb';

/** The exact request bytes: signatures are checked over these, never over re-serialized JSON. */
export async function readRawBody(ctx: Context): Promise<Buffer> {
  if (ctx.state.rawBody) return ctx.state.rawBody as Buffer;
  const raw = await getRawBody(ctx.req, { limit: LIMIT, length: ctx.request.length });
  ctx.state.rawBody = raw;
  return raw;
}

/** The JSON body; an empty body reads as `{}` so bodiless POSTs and PATCHes are fine. */
export async function readJson(ctx: Context): Promise<unknown> {
  const raw = await readRawBody(ctx);
  if (raw.length === 0) return {};
  const type = ctx.request.type;
  if (type && type !== 'application/json' && !type.endsWith('+json')) {
    throw new ApiError(415, 'unsupported_media_type', 'request body must be application/json');
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ApiError(400, 'invalid_json', 'request body is not valid JSON');
  }
}
