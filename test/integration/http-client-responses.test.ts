/**
 * What the HTTP client makes of a receiver's answer, against a real HTTPS server: the request goes
 * to the URL's path and query, the first 4 KiB of a long body are kept, a body cut off or stalled
 * past the timeout keeps the answer and what arrived of it, and a server that never answers is a
 * timeout.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createHttpClient, type HttpClient } from '../../src/delivery/http-client.js';
import { createDestinationPolicy } from '../../src/security/destination-policy.js';

type Handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;
const handlers = new Map<string, Handler>();
const seen: string[] = [];
let server: https.Server;
let port: number;
let client: HttpClient;
const TIMEOUT_MS = 400;

beforeAll(async () => {
  const { cert, key } = inject('tls');
  server = https.createServer({ cert, key }, (req, res) => {
    seen.push(req.url ?? '');
    req.resume();
    req.on('end', () => handlers.get(new URL(req.url ?? '/', 'https://x').pathname)?.(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  client = createHttpClient({ policy: createDestinationPolicy({ allowCidrs: ['127.0.0.0/8'] }), timeoutMs: TIMEOUT_MS });
});
afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const post = (path: string) => client.post({ endpointId: 'ep_answers', url: `https://127.0.0.1:${port}${path}` }, {}, Buffer.from('{}'));

describe("the HTTP client's reading of an answer", () => {
  it('sends to the path and query of each URL of one origin', async () => {
    handlers.set('/a', (_req, res) => res.end('a'));
    handlers.set('/b', (_req, res) => res.end('b'));
    const [a, b, again] = [await post('/a?x=1&y=2'), await post('/b'), await post('/a?x=3')];
    expect([a.excerpt, b.excerpt, again.excerpt]).toEqual(['a', 'b', 'a']);
    expect(seen.slice(-3)).toEqual(['/a?x=1&y=2', '/b', '/a?x=3']);
  });

  it('keeps the first 4 KiB of a long body, and the status and headers', async () => {
    handlers.set('/long', (_req, res) => {
      res.writeHead(500, { 'x-answer': 'long' });
      res.end('y'.repeat(20_000));
    });
    const r = await post('/long');
    expect([r.status, r.error, r.headers['x-answer']]).toEqual([500, 'non_2xx', 'long']);
    expect(r.excerpt?.startsWith('y'.repeat(4096))).toBe(true);
    expect(r.excerpt?.replace(/^y+/, '')).not.toContain('y');
  });

  it('keeps the answer and what arrived of a body cut off mid-way', async () => {
    handlers.set('/cut', (_req, res) => {
      res.writeHead(200, { 'content-length': '1000' });
      res.write('part');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const r = await post('/cut');
    expect([r.status, r.error, r.excerpt]).toEqual([200, null, 'part']);
  });

  it('keeps the answer and what arrived of a body stalled past the timeout', async () => {
    handlers.set('/stall', (_req, res) => {
      res.writeHead(502, { 'content-length': '1000' });
      res.write('slow');
    });
    const r = await post('/stall');
    expect([r.status, r.error, r.excerpt]).toEqual([502, 'non_2xx', 'slow']);
  });

  it('is a timeout when no answer comes, and an empty body has no excerpt', async () => {
    handlers.set('/silent', () => undefined);
    handlers.set('/empty', (_req, res) => {
      res.writeHead(204);
      res.end();
    });
    const silent = await post('/silent');
    expect([silent.status, silent.error]).toEqual([null, 'timeout']);
    const empty = await post('/empty');
    expect([empty.status, empty.error, empty.excerpt]).toEqual([204, null, null]);
  });
});
