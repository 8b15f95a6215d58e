import type { Context, Next } from 'koa';
import { DomainError } from '../core/domain-error.js';
import { isDatabaseUnavailable } from '../db/pool.js';
import { logger } from '../runtime/logger.js';

/** Seconds a client is told to wait when a dependency is down: about one reconnect attempt. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export function sendError(ctx: Context, status: number, code: string, message: string): void {
  ctx.status = status;
  ctx.body = { error: { code, message } };
}

/**
 * Every non-2xx answer wears the envelope. Postgres being unreachable is an outage, not a
 * bug: 503 with Retry-After, and the pool reconnects by itself once it is back. Unexpected
 * errors are logged with the request id and answered with a generic message: no stack, no SQL.
 */
export async function errorEnvelope(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) sendError(ctx, 404, 'not_found', `no route for ${ctx.method} ${ctx.path}`);
  } catch (err) {
    if (err instanceof DomainError) {
      for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
      sendError(ctx, err.status, err.code, err.message);
      return;
    }
    const status = (err as { status?: number; statusCode?: number }).status ?? (err as { statusCode?: number }).statusCode;
    if (status === 413) return sendError(ctx, 413, 'payload_too_large', 'request body is too large');
    if (status === 400) return sendError(ctx, 400, 'invalid_body', 'request body could not be read');
    if (isDatabaseUnavailable(err)) {
      (ctx.state.log ?? logger).warn({ err }, 'database unavailable');
      ctx.set('Retry-After', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
      return sendError(ctx, 503, 'service_unavailable', 'the service is temporarily unavailable; retry later');
    }
    (ctx.state.log ?? logger).error({ err }, 'unhandled error');
    // Koa's hook for unexpected errors, for whoever listens (the tests' harness shows the cause of a 500).
    ctx.app.emit('error', err, ctx);
    sendError(ctx, 500, 'internal_error', `internal error (request ${ctx.state.requestId ?? 'unknown'})`);
  }
}
