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
  /** What the next requests get; the last reply repeats. */
  reply(...replies: Reply[]): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const { cert, key } = inject('tls');
  const received: ReceivedRequest[] = [];
  let replies: Reply[] = [{ status: 200, body: 'ok' }];
  const server = https.createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), atMs: Date.now() });
      const reply = replies.length > 1 ? replies.shift()! : replies[0]!;
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
    reply: (...r) => {
      replies = r;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
