/**
 * The HTTP client's fair shares of an origin, against a real HTTPS receiver: a POST's timeout runs
 * from the moment it gets its share, never while it waits for one, an endpoint with nothing in
 * flight is not queued behind another endpoint's slow POSTs on the same origin, and a POST that
 * waited for a share goes out on the connection the POST before it gave back, as does one sent
 * the moment the POST before it returned.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpClient } from '../../src/delivery/http-client.js';
import { createDestinationPolicy } from '../../src/security/destination-policy.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';

let receiver: Receiver;
const clients: HttpClient[] = [];
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await receiver.close();
});

function client(cap: number, timeoutMs: number): HttpClient {
  const c = createHttpClient({ policy: createDestinationPolicy({ allowCidrs: ['127.0.0.0/8'] }), timeoutMs, maxConnectionsPerOrigin: cap });
  clients.push(c);
  return c;
}
const url = (path: string) => `https://127.0.0.1:${receiver.port}${path}`;
const body = Buffer.from('{}');

describe('fair shares of an origin in the HTTP client', () => {
  it("times a POST from its share's grant: POSTs that wait their turn do not time out", async () => {
    // Each POST is answered well within the timeout; three in turn take longer than it.
    const [ANSWER_MS, TIMEOUT_MS] = [2_000, 3_000];
    receiver.replyOn('/turns/', { status: 200, delayMs: ANSWER_MS });
    const c = client(1, TIMEOUT_MS);
    const started = Date.now();
    const results = await Promise.all([1, 2, 3].map((n) => c.post({ endpointId: 'ep_turns', url: url(`/turns/${n}`) }, {}, body)));
    const elapsed = Date.now() - started;
    // One at a time (a share of one connection): the last waited past the timeout for its turn, and none timed out.
    expect(elapsed).toBeGreaterThan(TIMEOUT_MS + ANSWER_MS);
    expect(results.map((r) => [r.status, r.error])).toEqual([
      [200, null],
      [200, null],
      [200, null],
    ]);
    // Each timed from its grant: about one answer long, not the whole wait (the last's would be all of it).
    for (const r of results) expect(r.durationMs).toBeLessThan(elapsed / 2);
    receiver.replyOn('/turns/', null);
  });

  it("starts an endpoint's first POST on an origin held by another endpoint's slow POSTs", async () => {
    let answer!: () => void;
    const held = new Promise<void>((r) => (answer = r));
    receiver.replyOn('/slow/', { status: 200, hold: held });
    const c = client(2, 10_000);
    const slow = Array.from({ length: 4 }, (_, n) => c.post({ endpointId: 'ep_slow', url: url(`/slow/${n}`) }, {}, body));
    await expect.poll(() => receiver.inFlight.size).toBe(2);
    // The slow endpoint holds the whole cap (it was alone): its other two POSTs wait.
    expect([...receiver.inFlight.keys()].every((p) => p.startsWith('/slow/'))).toBe(true);
    const fast = await c.post({ endpointId: 'ep_fast', url: url('/fast') }, {}, body);
    expect(fast).toMatchObject({ status: 200, error: null });
    // Still held: the fast POST went past the cap instead of waiting for them.
    expect(receiver.inFlight.size).toBe(2);
    answer();
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    receiver.replyOn('/slow/', null);
  });

  it('sends a POST that waited for a share on the connection the POST before it gave back, opening none', async () => {
    receiver.replyOn('/reuse/', { status: 200, delayMs: 10 });
    const c = client(2, 10_000);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, n) => c.post({ endpointId: 'ep_reuse', url: url(`/reuse/${n}`) }, {}, body)),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    // Two at a time (the cap): two connections, each carrying the POSTs that waited their turn.
    const connections = new Set(receiver.received.filter((r) => r.path.startsWith('/reuse/')).map((r) => r.remotePort));
    expect(connections.size).toBe(2);
    receiver.replyOn('/reuse/', null);
  });

  it('sends the next POST of a caller well under the cap on the connection its last POST gave back, opening none', async () => {
    // Four lanes of a session, each POSTing again the moment its POST before returns, with room
    // for 32: nothing waits for a share, so nothing but the pool decides which connection each takes.
    const c = client(32, 10_000);
    await Promise.all(
      Array.from({ length: 4 }, async (_, lane) => {
        for (let n = 0; n < 10; n++) {
          const r = await c.post({ endpointId: 'ep_lanes', url: url(`/lanes/${lane}/${n}`) }, {}, body);
          expect(r.status).toBe(200);
        }
      }),
    );
    const connections = new Set(receiver.received.filter((r) => r.path.startsWith('/lanes/')).map((r) => r.remotePort));
    expect(connections.size).toBe(4);
  });
});
