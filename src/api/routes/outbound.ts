/** Sending messages: `POST /api/v1/messages` (DECISIONS "Outbound messages"); the logic is src/channels/outbound/send-message.ts. */
import Router from '@koa/router';
import type { z } from 'zod';
import { DomainError } from '../../core/domain-error.js';
import { sendMessage, type SentMessage } from '../../channels/outbound/send-message.js';
import { principalOf, requireScope } from '../auth.js';
import { readJson } from '../body.js';
import type { ApiDeps } from '../deps.js';
import type { OutboundMessage } from '../schemas/messaging.js';

function presentSent(m: SentMessage): z.infer<typeof OutboundMessage> {
  return {
    id: m.id,
    channel_account_id: m.channel_account_id,
    channel: m.channel,
    contact_id: m.contact_id,
    conversation_id: m.conversation_id,
    external_id: m.external_id,
    direction: 'outbound',
    type: m.type ?? 'text',
    status: m.status ?? 'queued',
    to: m.to_recipient ?? '',
    created_at: m.created_at.toISOString(),
  };
}

/** `Idempotency-Key`: optional, 1 to 255 visible ASCII characters. */
function idempotencyKeyOf(raw: string): string | undefined {
  if (raw === '') return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(raw)) {
    throw new DomainError(422, 'invalid_request', 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  }
  return raw;
}

export function outboundRoutes(deps: ApiDeps): Router {
  const router = new Router();
  router.post('/api/v1/messages', requireScope('messages:write'), async (ctx) => {
    const { accountId, environment } = principalOf(ctx);
    const body = await readJson(ctx, 'invalid_message');
    const idempotencyKey = idempotencyKeyOf(ctx.get('idempotency-key'));
    // deps is read per request: the provider client may be attached after start (tests).
    const message = await sendMessage(
      { db: deps.db, providerApi: deps.providerApi, secretBox: deps.secretBox, now: deps.now },
      { accountId, environment },
      body,
      {
        idempotencyKey,
      },
    );
    if (message.replayed) ctx.set('Idempotent-Replayed', 'true');
    ctx.status = 202;
    ctx.body = { data: presentSent(message) };
  });
  return router;
}
