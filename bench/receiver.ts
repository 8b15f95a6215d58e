/**
 * The benchmark's webhook receiver, run by bench/run.ts in a process of its own (its CPU is
 * then not the measuring process's). HTTPS with the bench CA; checks every
 * X-Webhook-Signature against the secret of the endpoint the path names, counts every
 * X-Idempotency-Key, and reports arrivals to the parent over IPC in small batches. A request
 * signed the Svix way (svix-id, svix-timestamp, svix-signature: the peer of `npm run bench --
 * --peer`) is checked with that scheme, and its key is the `bench_key` of its JSON body.
 *
 * Parent -> child: { type: 'listen', cert, key } | { type: 'secrets', secrets: { path: secret } } | { type: 'stats' }
 * Child -> parent: { type: 'listening', port } | { type: 'arrivals', items: [key, atMs][] } | { type: 'stats', ... }
 */
import crypto from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { verifyHmacHex } from '../src/security/signature.js';

export interface ReceiverStats {
  type: 'stats';
  requests: number;
  badSignatures: number;
  unknownPaths: number;
  /** Idempotency keys seen more than once (a delivery sent twice). */
  duplicates: number;
  tests: number;
  /** TLS handshakes: with keep-alive, about one per connection the clients keep open. */
  connections: number;
}

export type ToReceiver =
  { type: 'listen'; cert: string; key: string } | { type: 'secrets'; secrets: Record<string, string> } | { type: 'stats' };
export type FromReceiver = { type: 'listening'; port: number } | { type: 'arrivals'; items: [string, number][] } | ReceiverStats;

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes of one machine. */
const now = () => performance.timeOrigin + performance.now();

const send = (m: FromReceiver) => process.send!(m);
const secrets = new Map<string, string>();
const seen = new Map<string, number>();
const stats: ReceiverStats = { type: 'stats', requests: 0, badSignatures: 0, unknownPaths: 0, duplicates: 0, tests: 0, connections: 0 };
let batch: [string, number][] = [];

// Batched so IPC costs one message per 20 ms, not one per request.
setInterval(() => {
  if (batch.length === 0) return;
  send({ type: 'arrivals', items: batch });
  batch = [];
}, 20).unref();

/** Svix's scheme: base64 HMAC-SHA256, keyed by the secret's base64 bytes, of `${id}.${timestamp}.${body}`; any of the `v1,` signatures. */
function verifySvix(secret: string, headers: NodeJS.Dict<string | string[]>, body: Buffer): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = crypto
    .createHmac('sha256', key)
    .update(`${String(headers['svix-id'])}.${String(headers['svix-timestamp'])}.`)
    .update(body)
    .digest();
  return String(headers['svix-signature'])
    .split(' ')
    .some((s) => {
      const got = Buffer.from(s.replace(/^v1,/, ''), 'base64');
      return got.length === expected.length && crypto.timingSafeEqual(got, expected);
    });
}
const svixKey = (body: Buffer): string => {
  try {
    return String((JSON.parse(body.toString('utf8')) as { bench_key?: unknown }).bench_key ?? '');
  } catch {
    return '';
  }
};

function listen(cert: string, key: string) {
  const server = https.createServer({ cert, key, keepAliveTimeout: 60_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      stats.requests++;
      const secret = secrets.get(req.url ?? '');
      const body = Buffer.concat(chunks);
      const svix = req.headers['svix-signature'] !== undefined;
      const signature = String(req.headers['x-webhook-signature'] ?? '');
      if (!secret) stats.unknownPaths++;
      else if (svix ? !verifySvix(secret, req.headers, body) : !verifyHmacHex(secret, body, signature)) stats.badSignatures++;
      if (req.headers['x-webhook-event'] === 'webhook.test') stats.tests++;
      else {
        const idKey = svix ? svixKey(body) : String(req.headers['x-idempotency-key'] ?? '');
        const count = (seen.get(idKey) ?? 0) + 1;
        seen.set(idKey, count);
        if (count === 2) stats.duplicates++;
        // The bare loop's keys are counted, not reported: the parent times that loop itself.
        if (!idKey.startsWith('bare:')) batch.push([idKey, at]);
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.on('secureConnection', () => stats.connections++);
  server.listen(0, '127.0.0.1', () => send({ type: 'listening', port: (server.address() as AddressInfo).port }));
}

process.on('message', (m: ToReceiver) => {
  if (m.type === 'listen') listen(m.cert, m.key);
  else if (m.type === 'secrets') for (const [p, s] of Object.entries(m.secrets)) secrets.set(p, s);
  else if (m.type === 'stats') {
    if (batch.length) send({ type: 'arrivals', items: batch.splice(0) });
    send({ ...stats });
  }
});
console.log('receiver ready');
// The parent gone (even killed) means the run is over: no orphan receiver.
process.on('disconnect', () => process.exit(0));
