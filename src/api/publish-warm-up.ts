/**
 * The publish route's code run on synthetic publishes before an API process listens. A new process
 * answers its first publishes in code V8 has not optimised yet: in the benchmark the first 5,000
 * after a start cost about 0.3 ms more CPU each in the API than the next 5,000. Here a loopback
 * server of the process's own serves a route that does what POST /api/v1/events does short of
 * authenticating and storing: Koa with the error envelope and the input guard, the body read and
 * parsed (`readJson`), checked against the catalog (`checkPublish`), its payload encoded as it is
 * stored (`encodePayload`), and a JSON answer; 16 keep-alive clients publish, as the benchmark's
 * publishers do. Nothing is authenticated, stored or counted in a metric; `startApi` logs one line
 * of what the warm-up did.
 */
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { Pool } from 'undici';
import { WARM_UP_EVENT_TYPE, warmUpEventData, type WarmUpReport } from '../core/warm-up-event.js';
import { encodePayload } from '../db/payload-bytes.js';
import { checkPublish } from '../events/publish.js';
import { readJson } from './body.js';
import { errorEnvelope } from './errors.js';
import { refuseUnstorableInput } from './validation.js';

const PATH = '/api/v1/events';

function warmUpApp(): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(errorEnvelope);
  const router = new Router();
  router.post(PATH, refuseUnstorableInput, async (ctx) => {
    const checked = checkPublish('live', await readJson(ctx, 'invalid_event'));
    const stored = encodePayload(checked.data);
    ctx.status = 201;
    ctx.body = { data: { type: checked.def.type, environment: 'live', payload_bytes: stored.length, data: checked.data } };
  });
  app.use(router.routes());
  return app;
}

/** `requests` synthetic publishes, `concurrency` at a time, each on a keep-alive connection of its own. */
export async function warmUpPublishing(opts: { requests: number; concurrency: number }): Promise<WarmUpReport> {
  const started = performance.now();
  if (opts.requests <= 0) return { acknowledged: 0, requests: 0, ms: 0 };
  // Exclusive: in a cluster worker a shared port 0 is one port for all workers, whose warm-ups would serve each other.
  const server = warmUpApp().listen({ port: 0, host: '127.0.0.1', exclusive: true });
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  const client = new Pool(`http://127.0.0.1:${port}`, { connections: Math.max(1, opts.concurrency) });
  let next = 0;
  let acknowledged = 0;
  const publisher = async () => {
    for (let n = next++; n < opts.requests; n = next++) {
      const res = await client.request({
        method: 'POST',
        path: PATH,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: WARM_UP_EVENT_TYPE, data: warmUpEventData(n) }),
      });
      await res.body.json();
      if (res.statusCode === 201) acknowledged++;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, publisher));
  } finally {
    await client.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  return { acknowledged, requests: opts.requests, ms: Math.round(performance.now() - started) };
}
