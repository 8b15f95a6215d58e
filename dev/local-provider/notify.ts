/**
 * Notifications from the local provider to the platform, as the real provider sends them: the
 * raw body signed `X-Hub-Signature-256: sha256=<hmac hex>` with the app secret, POSTed to the
 * channel's ingress. A refused or failed POST is retried a few times, like the provider does.
 */
import crypto from 'node:crypto';
import { doublingBackoffMs } from '../../src/core/backoff.js';

export type ProviderChannel = 'chatapp' | 'photoapp';

export interface Notifier {
  /** Signs and posts `body`; resolves with the platform's HTTP status (0 when unreachable). */
  postNotification(channel: ProviderChannel, body: unknown): Promise<number>;
}

/** The chatapp webhook envelope the ingress parses (DECISIONS "Provider ingress"). */
export function chatappEnvelope(wabaId: string, field: string, value: unknown, time?: number) {
  return {
    object: 'whatsapp_business_account',
    entry: [{ id: wabaId, ...(time === undefined ? {} : { time }), changes: [{ field, value }] }],
  };
}

export function createNotifier(opts: { platformUrl: string; appSecret: string; attempts?: number }): Notifier {
  const base = opts.platformUrl.replace(/\/+$/, '');
  const attempts = opts.attempts ?? 3;
  return {
    async postNotification(channel, body) {
      const raw = JSON.stringify(body);
      const signature = crypto.createHmac('sha256', Buffer.from(opts.appSecret, 'utf8')).update(raw).digest('hex');
      let status = 0;
      for (let i = 0; i < attempts; i++) {
        try {
          const res = await fetch(`${base}/provider/${channel}/webhook`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${signature}` },
            body: raw,
          });
          await res.arrayBuffer();
          status = res.status;
          if (status >= 200 && status < 300) return status;
        } catch {
          status = 0;
        }
        await new Promise((r) => setTimeout(r, doublingBackoffMs(100, i)));
      }
      return status;
    },
  };
}
