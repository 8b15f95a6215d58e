/** A real local HTTPS receiver, trusted through the test CA, that records what it gets. */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { inject } from 'vitest';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** When the whole request had arrived. */
  atMs: number;
  /** The sender's port: a test finds which process sent it by the sockets that process holds. */
  remotePort: number | undefined;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Bytes as given: a Buffer can hold invalid UTF-8 or NUL bytes. */
  body?: string | Buffer;
  delayMs?: number;
  /** The answer waits until this settles: a test holds a request in flight while it acts. */
  hold?: Promise<unknown>;
}

export interface Receiver {
  port: number;
  /** URL on a name that the test resolver maps to 127.0.0.1. */
  url(path?: string): string;
  received: ReceivedRequest[];
  /** The deliveries (not test sends) received under a path prefix. */
  deliveriesUnder(prefix: string): ReceivedRequest[];
  /** What the next requests get; the last reply repeats. */
  reply(...replies: Reply[]): void;
  /** What every request under a path prefix gets, before `reply` is consulted; null to stop. */
  replyOn(prefix: string, reply: Reply | null): void;
  /** Requests received and not yet answered, by path. */
  inFlight: Map<string, number>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const { cert, key } = inject('tls');
  const received: ReceivedRequest[] = [];
  let replies: Reply[] = [{ status: 200, body: 'ok' }];
  const routes = new Map<string, Reply>();
  const inFlight = new Map<string, number>();
  const track = (path: string, delta: number) => {
    const n = (inFlight.get(path) ?? 0) + delta;
    if (n > 0) inFlight.set(path, n);
    else inFlight.delete(path);
  };
  const routed = (path: string) => [...routes].find(([prefix]) => path.startsWith(prefix))?.[1];
  const server = https.createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      received.push({
        method: req.method ?? '',
        path,
        headers: req.headers,
        body: Buffer.concat(chunks),
        atMs: Date.now(),
        remotePort: req.socket.remotePort,
      });
      const reply = routed(path) ?? (replies.length > 1 ? replies.shift()! : replies[0]!);
      track(path, 1);
      res.once('close', () => track(path, -1));
      const send = () => {
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body ?? '');
      };
      const answer = () => (reply.delayMs ? setTimeout(send, reply.delayMs).unref() : send());
      if (reply.hold) void reply.hold.then(answer, answer);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/hooks') => `https://receiver.test:${port}${path}`,
    received,
    deliveriesUnder: (prefix) => received.filter((r) => r.path.startsWith(prefix) && r.headers['x-webhook-event'] !== 'webhook.test'),
    reply: (...r) => {
      replies = r;
    },
    replyOn: (prefix, reply) => {
      if (reply) routes.set(prefix, reply);
      else routes.delete(prefix);
    },
    inFlight,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
