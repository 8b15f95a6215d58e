/** The SDK's error model (SPEC 7), its timeout and retries, and the stream reader, against a tiny scripted HTTP server. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookPlatform, WebhookPlatformError, type ClientOptions } from '@webhook-platform/sdk';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  at: number;
}
type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let server: http.Server;
let base: string;
const seen: Seen[] = [];
let handler: Handler = (_req, res) => res.end();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, at: Date.now() });
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});
afterAll(
  () =>
    new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    }),
);

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const client = (o: Partial<ClientOptions> = {}) => new WebhookPlatform({ baseUrl: base, apiKey: 'wh_live_test', ...o });

async function failure(p: Promise<unknown>): Promise<WebhookPlatformError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebhookPlatformError);
  return err as WebhookPlatformError;
}

const endpoint = { id: '00000000-0000-4000-8000-000000000001', url: 'https://x.example/h' };

describe('SDK error model', () => {
  it('a closed port is network_error with status 0', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const err = await failure(
      new WebhookPlatform({ baseUrl: `http://127.0.0.1:${port}/api/v1`, anonymous: true, maxRetries: 0 }).webhooks.list(),
    );
    expect(err).toMatchObject({ status: 0, code: 'network_error' });
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('refuses a missing API key at construction, unless anonymous for public routes', () => {
    expect(() => new WebhookPlatform({ baseUrl: base, apiKey: process.env.NO_SUCH_VARIABLE_SET })).toThrow(
      /apiKey is undefined: pass an API key .*anonymous: true/,
    );
    expect(() => new WebhookPlatform({ baseUrl: base, apiKey: ' ' })).toThrow(/apiKey is empty/);
    expect(() => new WebhookPlatform({ baseUrl: base, anonymous: true })).not.toThrow();
  });

  it('sends the key to {baseUrl}/path and returns the data', async () => {
    seen.length = 0;
    handler = (_req, res) => json(res, 200, { data: endpoint });
    expect(await client().webhooks.get(endpoint.id)).toEqual(endpoint);
    expect(seen[0]).toMatchObject({ method: 'GET', url: `/api/v1/webhooks/${endpoint.id}` });
    expect(seen[0]!.headers['x-api-key']).toBe('wh_live_test');
  });

  it('the error envelope is an error even on a 2xx, with the HTTP status and its code', async () => {
    handler = (_req, res) => json(res, 200, { error: { code: 'media_not_ready', message: 'not yet' } });
    expect(await failure(client().webhooks.get(endpoint.id))).toMatchObject({ status: 200, code: 'media_not_ready', message: 'not yet' });
    handler = (_req, res) => json(res, 404, { error: { code: 'not_found', message: 'webhook endpoint not found' } });
    expect(await failure(client().webhooks.get(endpoint.id))).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('an answer that is not JSON is malformed_response with status 0, whatever its status', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>hello</html>');
    };
    expect(await failure(client().webhooks.list())).toMatchObject({ status: 0, code: 'malformed_response' });
    handler = (_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>Bad gateway</html>');
    };
    const err = await failure(client({ maxRetries: 0 }).webhooks.list());
    expect(err).toMatchObject({ status: 0, code: 'malformed_response' });
    expect(err.message).toContain('502');
  });

  it('JSON of the wrong shape is malformed_response', async () => {
    handler = (_req, res) => json(res, 200, { data: [endpoint] });
    expect(await failure(client().webhooks.list())).toMatchObject({ status: 0, code: 'malformed_response' }); // no paging
    handler = (_req, res) => json(res, 200, [endpoint]);
    expect(await failure(client().webhooks.get(endpoint.id))).toMatchObject({ status: 0, code: 'malformed_response' });
    handler = (_req, res) => json(res, 500, { message: 'boom' });
    expect(await failure(client().webhooks.get(endpoint.id))).toMatchObject({ status: 0, code: 'malformed_response' });
  });

  it('a 204 with no body is a success', async () => {
    handler = (_req, res) => {
      res.writeHead(204);
      res.end();
    };
    await expect(client().webhooks.delete(endpoint.id)).resolves.toBeUndefined();
  });

  it('a 429 is retried after its Retry-After, then succeeds', async () => {
    seen.length = 0;
    let calls = 0;
    handler = (_req, res) => {
      if (++calls === 1) json(res, 429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '1' });
      else json(res, 201, { data: { ...endpoint, secret: 'whsec_x' } });
    };
    const created = await client().webhooks.create({ url: endpoint.url, events: ['crm'] });
    expect(created.secret).toBe('whsec_x');
    expect(seen.map((s) => s.method)).toEqual(['POST', 'POST']);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('past maxRetries the 429 is the error, with its retryAfter', async () => {
    seen.length = 0;
    handler = (_req, res) => json(res, 429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '0' });
    const err = await failure(client({ maxRetries: 2 }).events.list());
    expect(err).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: 0 });
    expect(seen).toHaveLength(3);
    seen.length = 0;
    await failure(client({ maxRetries: 0 }).events.list());
    expect(seen).toHaveLength(1);
  });
});

describe('SDK timeout and retries of what is safe to send again', () => {
  const fast = { timeoutMs: 200, defaultRetryDelayMs: 10, maxRetries: 2 };
  const unavailable = (res: http.ServerResponse) => json(res, 503, { error: { code: 'unavailable', message: 'try again' } });
  const event = { type: 'crm.demand.created', data: {} } as never;
  const stored = { id: endpoint.id, cursor: '1', type: 'crm.demand.created', created_at: '2026-11-24T00:00:00.000Z', data: {} };

  it('a request with no answer fails with timeout: a GET after its retries, a create once', async () => {
    const hanging: http.ServerResponse[] = [];
    handler = (_req, res) => void hanging.push(res);
    try {
      seen.length = 0;
      expect(await failure(client(fast).events.list())).toMatchObject({ status: 0, code: 'timeout' });
      expect(seen.map((s) => s.method)).toEqual(['GET', 'GET', 'GET']);
      seen.length = 0;
      const err = await failure(client(fast).webhooks.create({ url: endpoint.url, events: ['crm'] }));
      expect(err).toMatchObject({ status: 0, code: 'timeout' });
      expect(err.message).toContain('within 200 ms');
      expect(seen.map((s) => s.method)).toEqual(['POST']);
    } finally {
      for (const res of hanging) res.destroy();
    }
  });

  it('a 503 is retried for a publish (its idempotency key makes a repeat safe), never for a create', async () => {
    seen.length = 0;
    let calls = 0;
    handler = (_req, res) => (++calls === 1 ? unavailable(res) : json(res, 201, { data: stored }));
    const published = await client(fast).events.publish(event);
    expect(published).toMatchObject({ created: true, event: { id: endpoint.id } });
    expect(seen.map((s) => s.url)).toEqual(['/api/v1/events', '/api/v1/events']);
    seen.length = 0;
    handler = (_req, res) => unavailable(res);
    expect(await failure(client(fast).webhooks.create({ url: endpoint.url, events: ['crm'] }))).toMatchObject({
      status: 503,
      code: 'unavailable',
    });
    expect(seen).toHaveLength(1);
  });

  it('a connection cut before the answer: a send with an idempotency key is sent again under that key, one without is not', async () => {
    const message = { id: endpoint.id, status: 'queued' };
    let calls = 0;
    handler = (req, res) => (++calls % 2 === 1 ? req.socket.destroy() : json(res, 201, { data: message }));
    const body = { channel_account_id: endpoint.id, to: '15550001234', type: 'text', text: { body: 'hi' } } as never;
    seen.length = 0;
    expect(await client(fast).messages.send(body, { idempotencyKey: 'order-42' })).toEqual(message);
    expect(seen.map((s) => s.headers['idempotency-key'])).toEqual(['order-42', 'order-42']);
    seen.length = 0;
    expect(await failure(client(fast).messages.send(body))).toMatchObject({ status: 0, code: 'network_error' });
    expect(seen).toHaveLength(1);
  });

  it("the caller's signal ends a request at once: its own abort error, no retry", async () => {
    const hanging: http.ServerResponse[] = [];
    handler = (_req, res) => void hanging.push(res);
    try {
      seen.length = 0;
      const err = await client({ ...fast, timeoutMs: 10_000 })
        .events.list({}, { signal: AbortSignal.timeout(100) })
        .catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(WebhookPlatformError);
      expect((err as Error).name).toBe('TimeoutError');
      expect(seen).toHaveLength(1);
    } finally {
      for (const res of hanging) res.destroy();
    }
  });
});

describe('stream reader', () => {
  const item = (n: number) => ({
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    cursor: String(n),
    type: 'crm.demand.created',
    environment: 'live',
    message_id: null,
    external_id: null,
    occurred_at: '2026-01-01T00:00:00.000Z',
    created_at: '2026-01-01T00:00:00.000Z',
    data: {},
  });

  it('reads pages from the saved cursor, skips ids already yielded, and exposes the cursor to save', async () => {
    seen.length = 0;
    handler = (req, res) => {
      const after = Number(new URL(req.url!, 'http://x').searchParams.get('after'));
      // The second page repeats item 12 (as after a retry): it is yielded once.
      if (after === 10) json(res, 200, { data: [item(11), item(12)], paging: { cursor: '12', next: '12', has_more: true } });
      else if (after === 12) json(res, 200, { data: [item(12), item(13)], paging: { cursor: '13', next: null, has_more: false } });
      else json(res, 200, { data: [], paging: { cursor: String(after), next: null, has_more: false } });
    };
    const stream = client().events.stream({ after: '10', limit: 2 });
    const got: string[] = [];
    for await (const it of stream) got.push(`${it.cursor}@${stream.cursor}`);
    expect(got).toEqual(['11@11', '12@12', '13@13']);
    expect(stream.cursor).toBe('13');
    expect(stream.lastPaging).toEqual({ cursor: '13', next: null, has_more: false });
    expect(seen.map((s) => new URL(s.url, 'http://x').search)).toEqual(['?after=10&limit=2', '?after=12&limit=2']);
  });

  it('follows: polls an empty end with a growing wait, yields what arrives, stops on abort', async () => {
    seen.length = 0;
    let polls = 0;
    handler = (req, res) => {
      const after = Number(new URL(req.url!, 'http://x').searchParams.get('after'));
      polls++;
      if (polls === 4 && after === 5) json(res, 200, { data: [item(6)], paging: { cursor: '6', next: null, has_more: false } });
      else json(res, 200, { data: [], paging: { cursor: String(after), next: null, has_more: false } });
    };
    const stop = new AbortController();
    const stream = client().events.stream({ after: '5', follow: true, pollIntervalMs: 50, maxPollIntervalMs: 400, signal: stop.signal });
    const got: string[] = [];
    for await (const it of stream) {
      got.push(it.cursor);
      setTimeout(() => stop.abort(), 300);
    }
    expect(got).toEqual(['6']);
    expect(stream.cursor).toBe('6');
    const gaps = seen.slice(1, 4).map((s, i) => s.at - seen[i]!.at);
    // 50, 100, 200 ms: the wait doubles while the stream is empty.
    expect(gaps[1]!).toBeGreaterThan(gaps[0]! * 1.5);
    expect(gaps[2]!).toBeGreaterThan(gaps[1]! * 1.5);
  });
});
