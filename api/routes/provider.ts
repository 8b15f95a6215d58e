/**
 * The messaging provider's webhook. Authenticated by its HMAC signature, not an API key.
 * A notification that cannot be used is still answered 200 (the provider would otherwise
 * retry it forever) and kept in provider_rejections for an operator to read.
 */
import Router from '@koa/router';
import { ingestChatappNotification, RejectedNotification } from '../../ingest/chatapp-webhook.js';
import { verifyHmacHex } from '../../security/signature.js';
import { readRawBody } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { ApiError } from '../errors.js';

export function providerRoutes(deps: ApiDeps): Router {
  const router = new Router();

  router.get('/provider/chatapp/webhook', (ctx) => {
    const q = ctx.query;
    const token = deps.provider.verifyToken;
    if (q['hub.mode'] !== 'subscribe' || !token || q['hub.verify_token'] !== token || typeof q['hub.challenge'] !== 'string') {
      throw new ApiError(403, 'forbidden', 'verification token mismatch');
    }
    ctx.type = 'text/plain';
    ctx.body = q['hub.challenge'];
  });

  router.post('/provider/chatapp/webhook', async (ctx) => {
    const secret = deps.provider.appSecret;
    if (!secret) throw new ApiError(503, 'provider_not_configured', 'PROVIDER_APP_SECRET is not set');
    const raw = await readRawBody(ctx);
    const header = ctx.get('x-hub-signature-256');
    if (!header.startsWith('sha256=') || !verifyHmacHex(secret, raw, header.slice(7))) {
      throw new ApiError(401, 'invalid_signature', 'X-Hub-Signature-256 does not match the body');
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      await reject(deps, 'body is not JSON', raw);
      ctx.body = { received: true };
      return;
    }
    try {
      const events = await ingestChatappNotification({ db: deps.db, wakes: deps.wakes }, body);
      ctx.body = { received: true, events };
    } catch (err) {
      if (!(err instanceof RejectedNotification)) throw err;
      await reject(deps, err.message, raw);
      ctx.state.log.warn({ reason: err.message }, 'provider notification rejected');
      ctx.body = { received: true, events: 0 };
    }
  });

  return router;
}

async function reject(deps: ApiDeps, reason: string, raw: Buffer): Promise<void> {
  await deps.db.query(`INSERT INTO provider_rejections (provider, reason, body) VALUES ('chatapp', $1, $2)`, [reason, raw.toString('utf8')]);
}
