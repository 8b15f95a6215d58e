/**
 * The sending path run on synthetic deliveries before a worker takes work. A new process runs its
 * first deliveries in code V8 has not optimised yet: in the benchmark the first 5,000 after a start
 * cost about 0.3 ms more CPU each in the worker than the next 5,000, and the first endpoint's p99
 * was three to four times the warm one. Here the same functions a session calls for each delivery
 * run first: the stored payload inflated as a claim inflates it, the webhook body built around its
 * JSON (claimedEventBody), a sealed secret opened, both signatures, a share of the origin, the POST
 * on a pooled keep-alive connection, and the answer's excerpt. They go to a receiver of this
 * process's own on loopback, through an HTTP client of their own (the worker's client never allows
 * loopback); nothing reaches Postgres, a receiver or a metric.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventDefinition } from '../core/catalog/index.js';
import { WARM_UP_EVENT_TYPE as EVENT_TYPE, warmUpEventData, type WarmUpReport } from '../core/warm-up-event.js';
import type { ClaimedEvent } from '../db/deliveries.js';
import { encodedPayloadsJson, encodePayload } from '../db/payload-bytes.js';
import { createDestinationPolicy } from '../security/destination-policy.js';
import type { SecretBox } from '../security/secret-box.js';
import { createHttpClient } from './http-client.js';
import { claimedEventBody, sendToEndpoint, webhookTimestampOf } from './send-webhook.js';

/** A loopback receiver that answers every POST 200 once it has read the body. */
async function loopbackReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{"ok":true}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/warm-up`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `requests` synthetic deliveries, `concurrency` at a time, as a session's lanes send them. */
export async function warmUpSending(opts: {
  requests: number;
  concurrency: number;
  secretBox: Pick<SecretBox, 'seal' | 'open'>;
  timeoutMs: number;
}): Promise<WarmUpReport> {
  const started = performance.now();
  if (opts.requests <= 0) return { acknowledged: 0, requests: 0, ms: 0 };
  const receiver = await loopbackReceiver();
  const client = createHttpClient({ policy: createDestinationPolicy({ allowCidrs: ['127.0.0.1/32'] }), timeoutMs: opts.timeoutMs });
  const def = getEventDefinition(EVENT_TYPE)!;
  const target = {
    id: 'warm-up',
    url: receiver.url,
    secret_ciphertext: opts.secretBox.seal(`whsec_warm-up-${started}`),
    authorization_ciphertext: null,
  };
  let next = 0;
  let acknowledged = 0;
  const lane = async () => {
    for (let n = next++; n < opts.requests; n = next++) {
      const stored = encodePayload(warmUpEventData(n));
      const event: ClaimedEvent = {
        id: `warm-up-${n}`,
        type: EVENT_TYPE,
        customer_id: null,
        environment: 'live',
        channel: null,
        channel_account: null,
        external_id: null,
        payload: stored,
        dataJson: encodedPayloadsJson([stored])[0],
      };
      // No slot given: the client takes the origin's share itself, as a session's lane does first.
      const outcome = await sendToEndpoint(client, opts.secretBox, target, {
        eventType: EVENT_TYPE,
        idempotencyKey: `warm-up-${n}`,
        webhookId: `warm-up-${n}`,
        body: claimedEventBody(def, event),
        timestampSeconds: webhookTimestampOf(Date.now()),
      });
      if (outcome.acknowledged) acknowledged++;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, lane));
  } finally {
    await client.close();
    await receiver.close();
  }
  return { acknowledged, requests: opts.requests, ms: Math.round(performance.now() - started) };
}
