/**
 * The messaging provider's webhooks, one per channel. Authenticated by the provider's HMAC
 * signature, not an API key. A notification that cannot be used is still answered 200 (the
 * provider would otherwise retry it forever) and kept in provider_rejections for an operator.
 */
import Router from '@koa/router';
import { ingestChatappNotification } from '../../channels/inbound/chatapp-webhook.js';
import { RejectedNotification, type InboundDeps } from '../../channels/inbound/inbound-deps.js';
import { ingestPhotoappNotification } from '../../channels/inbound/photoapp-webhook.js';
import { findUnstorableText, toStorableText, UNSTORABLE_REASON } from '../../core/storable-text.js';
import { recordProviderRejection } from '../../db/messaging.js';
import { verifyHmacHex } from '../../security/signature.js';
import { readRawBody } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { DomainError } from '../../core/domain-error.js';

/** Each ingress answers the events it stored and the items it did not read (beyond its limit). */
const INGRESSES: Record<'chatapp' | 'photoapp', (deps: InboundDeps, body: unknown) => Promise<{ events: number; beyondLimit: number }>> = {
  chatapp: async (deps, body) => ({ events: await ingestChatappNotification(deps, body), beyondLimit: 0 }),
  photoapp: ingestPhotoappNotification,
};

export function providerRoutes(deps: ApiDeps): Router {
  const router = new Router();
  for (const [channel, ingest] of Object.entries(INGRESSES)) {
    const path = `/provider/${channel}/webhook`;

    router.get(path, (ctx) => {
      const q = ctx.query;
      const token = deps.provider.verifyToken;
      if (q['hub.mode'] !== 'subscribe' || !token || q['hub.verify_token'] !== token || typeof q['hub.challenge'] !== 'string') {
        throw new DomainError(403, 'forbidden', 'verification token mismatch');
      }
      ctx.type = 'text/plain';
      ctx.body = q['hub.challenge'];
    });

    router.post(path, async (ctx) => {
      const secret = deps.provider.appSecret;
      if (!secret) throw new DomainError(503, 'provider_not_configured', 'PROVIDER_APP_SECRET is not set');
      const raw = await readRawBody(ctx);
      const header = ctx.get('x-hub-signature-256');
      if (!header.startsWith('sha256=') || !verifyHmacHex(secret, raw, header.slice(7))) {
        throw new DomainError(401, 'invalid_signature', 'X-Hub-Signature-256 does not match the body');
      }
      const reject = async (reason: string) => {
        // The record itself must be storable: a body or reason may hold NUL bytes (U+FFFD in their place).
        await recordProviderRejection(deps.db, {
          provider: channel,
          reason: toStorableText(reason),
          body: toStorableText(raw.toString('utf8')),
        });
        ctx.state.log.warn({ channel, reason }, 'provider notification rejected');
        ctx.body = { received: true, events: 0 };
      };
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return reject('body is not JSON');
      }
      const unstorable = findUnstorableText(body);
      if (unstorable !== undefined) return reject(`${unstorable}: ${UNSTORABLE_REASON}`);
      try {
        const { events, beyondLimit } = await ingest(
          { db: deps.db, wakes: deps.wakes, now: deps.now, providerApi: deps.providerApi },
          body,
        );
        // 200 for what was stored; items beyond the limit are named by count (kept in provider_rejections).
        ctx.body = { received: true, events, ...(beyondLimit > 0 ? { items_beyond_limit: beyondLimit } : {}) };
      } catch (err) {
        if (!(err instanceof RejectedNotification)) throw err;
        await reject(err.message);
      }
    });
  }
  return router;
}
