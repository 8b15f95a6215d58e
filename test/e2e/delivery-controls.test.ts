/**
 * Delivery controls end to end: bulk recovery, the Standard Webhooks headers and the per-endpoint
 * throttle, through the production entry points (startApi, runWorker) on the Temporal dev server
 * and Postgres, with a local HTTPS receiver, verified with the official `standardwebhooks` package.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApi } from '../../src/api/server.js';
import { eventually, testDb, type Tenant } from '../support/harness.js';
import { startReceiver, type Receiver, type ReceivedRequest } from '../support/https-receiver.js';
import { startService, type RunningService } from '../support/running-service.js';
import { demandEvent } from '../support/kit.js';
import { WEBHOOKS_CLI } from '../support/webhooks-cli.js';

let service: RunningService;
let api: RunningApi;
let receiver: Receiver;
let tenant: Tenant;

beforeAll(async () => {
  [service, receiver] = await Promise.all([startService({ name: 'controls' }), startReceiver()]);
  ({ api, tenant } = service);
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

const call = (method: string, path: string, body?: unknown) => service.call(method, path, body);

/** A verified endpoint on its own receiver path; the receiver answers 200 from here on. */
async function verifiedEndpoint(path: string, extra: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  receiver.reply({ status: 200 });
  const created = await call('POST', '/api/v1/webhooks', { url: `https://localhost:${receiver.port}${path}`, events: ['crm'], ...extra });
  expect(created.status).toBe(201);
  expect((await call('POST', `/api/v1/webhooks/${created.body.data.id}/test`)).status).toBe(200);
  return { id: created.body.data.id, secret: created.body.data.secret };
}

const postsTo = (path: string, from = 0) =>
  receiver.received.slice(from).filter((r) => r.path === path && r.headers['x-webhook-event'] === 'crm.demand.created');

async function publish(tag: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await call('POST', '/api/v1/events', demandEvent(`${tag}_${i}`));
    expect(res.status).toBe(201);
  }
}

async function deliveriesOf(endpointId: string) {
  const { rows } = await testDb().query<{ id: string; status: string; idempotency_key: string; terminal_reason: string | null }>(
    `SELECT id, status, idempotency_key, terminal_reason FROM deliveries WHERE endpoint_id = $1 AND event_id IS NOT NULL ORDER BY created_at`,
    [endpointId],
  );
  return rows;
}

/** Verifies a received POST with the official Standard Webhooks library, given the (generated) secret as shown. */
function verifyStandard(post: ReceivedRequest, secret: string): unknown {
  return new Webhook(secret).verify(post.body, post.headers as Record<string, string>);
}

describe('Standard Webhooks headers on real sends', () => {
  it('a test send through the API and a delivery by the worker verify with the official library; webhook-id is the delivery id', async () => {
    const path = `/std/${crypto.randomUUID()}`;
    const { id, secret } = await verifiedEndpoint(path);
    const test = receiver.received.filter((r) => r.path === path && r.headers['x-webhook-event'] === 'webhook.test').at(-1)!;
    expect(verifyStandard(test, secret)).toMatchObject({ event: 'webhook.test' });
    const tests = await call('GET', `/api/v1/webhook_deliveries?endpoint_id=${id}&event_type=webhook.test`);
    expect(test.headers['webhook-id']).toBe(tests.body.data[0].id);
    // Ours are still there, unchanged.
    expect(test.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', secret).update(test.body).digest('hex'));

    await publish(`std_${id}`, 1);
    const [post] = await eventually(async () => (postsTo(path).length === 1 ? postsTo(path) : undefined));
    expect(verifyStandard(post!, secret)).toMatchObject({ event: 'crm.demand.created' });
    const [row] = await deliveriesOf(id);
    expect(post!.headers['webhook-id']).toBe(row!.id);
    expect(Math.abs(Number(post!.headers['webhook-timestamp']) - post!.atMs / 1000)).toBeLessThan(5);
    // A wrong secret does not verify.
    expect(() => verifyStandard(post!, `${secret}x`)).toThrow();
  });
});

describe('bulk recovery with the real worker', () => {
  it('after an outage: deliveries end failed or exhausted, the receiver is fixed, a recovery sends each once, a repeat recovers nothing', async () => {
    const path = `/recover/${crypto.randomUUID()}`;
    const since = new Date().toISOString();
    const { id, secret } = await verifiedEndpoint(path);

    // The receiver fails: the first session's POSTs fail together (one failure of the streak).
    receiver.reply({ status: 503, body: 'down' });
    await publish(`recover_${id}`, 6);
    await eventually(async () => {
      const rows = await deliveriesOf(id);
      return rows.length === 6 && rows.some((r) => r.status === 'failed');
    });
    await eventually(async () => (await call('GET', `/api/v1/webhooks/${id}`)).body.data.failure_streak > 0);
    // Days pass in a moment: two held deliveries expired (exhausted / hold_expired), one event was deleted.
    const rows = await deliveriesOf(id);
    const notFailed = rows.filter((r) => r.status !== 'failed');
    const [expired1, expired2, deleted] = [...notFailed, ...rows.filter((r) => r.status === 'failed')];
    await testDb().query(
      `UPDATE deliveries SET status = 'exhausted', terminal_reason = 'hold_expired', next_attempt_at = NULL WHERE id = ANY($1)`,
      [[expired1!.id, expired2!.id]],
    );
    await testDb().query(
      `UPDATE deliveries SET status = 'exhausted', terminal_reason = 'event_deleted', next_attempt_at = NULL WHERE id = $1`,
      [deleted!.id],
    );
    const failedPosts = postsTo(path);
    expect(failedPosts.length).toBeGreaterThan(0);

    // Fixed: a 2xx test resets the streak, then the recovery puts every failed and exhausted one back.
    receiver.reply({ status: 200 });
    const fixedAt = receiver.received.length;
    expect((await call('POST', `/api/v1/webhooks/${id}/test`)).status).toBe(200);
    const before = await deliveriesOf(id);
    const recoverable = before.filter((r) => r.status === 'failed' || (r.status === 'exhausted' && r.terminal_reason === 'hold_expired'));
    const recovered = await call('POST', `/api/v1/webhooks/${id}/recover`, { since, statuses: ['failed', 'exhausted', 'limited'] });
    expect(recovered.status).toBe(200);
    expect(recovered.body.data).toMatchObject({ recovered: recoverable.length, statuses: ['failed', 'exhausted', 'limited'] });
    expect(recoverable.length).toBeGreaterThanOrEqual(2);

    // Every delivery but the deleted event's arrives, once, with a 2xx.
    const done = await eventually(async () => {
      const now = await deliveriesOf(id);
      return now.filter((r) => r.status === 'success').length === 5 ? now : undefined;
    }, 30_000);
    expect(done.find((r) => r.id === deleted!.id)).toMatchObject({ status: 'exhausted', terminal_reason: 'event_deleted' });
    await new Promise((r) => setTimeout(r, 1500));
    const arrived = postsTo(path, fixedAt);
    expect(arrived.map((p) => p.headers['x-idempotency-key']).sort()).toEqual(
      done
        .filter((r) => r.status === 'success')
        .map((r) => r.idempotency_key)
        .sort(),
    );
    // Each verifies, and a delivery keeps its webhook-id from its failed attempt to its recovery;
    // only the deleted event's delivery, which failed too, never arrives.
    for (const p of arrived) expect(verifyStandard(p, secret)).toMatchObject({ event: 'crm.demand.created' });
    const deletedKey = done.find((r) => r.id === deleted!.id)!.idempotency_key;
    for (const f of failedPosts) {
      const later = arrived.find((p) => p.headers['x-idempotency-key'] === f.headers['x-idempotency-key']);
      if (f.headers['x-idempotency-key'] === deletedKey) expect(later).toBeUndefined();
      else expect(later?.headers['webhook-id']).toBe(f.headers['webhook-id']);
    }
    const endpoint = (await call('GET', `/api/v1/webhooks/${id}`)).body.data;
    expect(endpoint).toMatchObject({ failure_streak: 0, health_status: 'healthy' });

    const again = await call('POST', `/api/v1/webhooks/${id}/recover`, { since });
    expect(again.body.data.recovered).toBe(0);
    await new Promise((r) => setTimeout(r, 1000));
    expect(postsTo(path, fixedAt)).toHaveLength(5);
  });
});

describe('per-endpoint throttle with the real worker', () => {
  /** The most POSTs whose arrival falls in any window of `windowMs`. */
  const busiestWindow = (posts: ReceivedRequest[], windowMs: number) =>
    Math.max(...posts.map((p) => posts.filter((q) => q.atMs >= p.atMs && q.atMs < p.atMs + windowMs).length));

  it('40 events to an endpoint limited to 5 per second arrive at no more than 5 per second, all succeed, the streak stays 0', async () => {
    const path = `/throttle/${crypto.randomUUID()}`;
    const { id } = await verifiedEndpoint(path, { rate_limit: 5 });
    await publish(`throttle_${id}`, 40);
    const posts = await eventually(async () => (postsTo(path).length >= 40 ? postsTo(path) : undefined), 60_000);
    const rows = await eventually(async () => {
      const r = await deliveriesOf(id);
      return r.length === 40 && r.every((d) => d.status === 'success') ? r : undefined;
    });
    expect(rows).toHaveLength(40);
    expect(posts).toHaveLength(40);
    // At most 5 a second (6 allows for a window whose both edges fall on arrivals), and throttled indeed:
    // 39 gaps of 200 ms take about 7.8 s.
    expect(busiestWindow(posts, 1000)).toBeLessThanOrEqual(6);
    expect(posts.at(-1)!.atMs - posts[0]!.atMs).toBeGreaterThanOrEqual(7_000);
    const endpoint = (await call('GET', `/api/v1/webhooks/${id}`)).body.data;
    expect(endpoint).toMatchObject({ failure_streak: 0, health_status: 'healthy', rate_limit: 5, last_failure_at: null });
  });

  it('a PATCH of rate_limit applies to the POSTs after it', async () => {
    const path = `/throttle-patch/${crypto.randomUUID()}`;
    const { id } = await verifiedEndpoint(path, { rate_limit: 1 });
    await publish(`patch_${id}`, 10);
    await eventually(async () => postsTo(path).length >= 2, 20_000);
    const slow = postsTo(path);
    // One a second so far.
    expect(slow.length).toBeLessThanOrEqual(3);
    expect((await call('PATCH', `/api/v1/webhooks/${id}`, { rate_limit: 50 })).body.data.rate_limit).toBe(50);
    const patchedAt = Date.now();
    const all = await eventually(async () => (postsTo(path).length >= 10 ? postsTo(path) : undefined), 20_000);
    // At the old pace every gap between POSTs is 1 s or more; at 50 a second they are some 20 ms.
    // The lane already waiting may still wait out its second (it re-reads the endpoint at least
    // once a second), and a busy machine may stall one POST or two: most gaps, not all, are short.
    const after = all.filter((p) => p.atMs > patchedAt);
    expect(after.length).toBeGreaterThanOrEqual(7);
    const gaps = after.slice(1).map((p, i) => p.atMs - after[i]!.atMs);
    expect(gaps.filter((g) => g < 500).length, `gaps ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(5);
    expect((await call('GET', `/api/v1/webhooks/${id}`)).body.data.failure_streak).toBe(0);
  });
});

describe('the CLI', () => {
  /** `webhooks` as a child process against this API; resolves with its exit code and parsed JSON. */
  const cli = (args: string[]) =>
    new Promise<{ code: number; json: any; stderr: string }>((resolve) => {
      const env = {
        ...process.env,
        WEBHOOKS_CONFIG: path.join(os.tmpdir(), `webhooks-controls-${crypto.randomUUID()}.json`),
        WEBHOOKS_API_KEY: tenant.key,
        WEBHOOKS_BASE_URL: `${api.url}/api/v1`,
      };
      execFile(process.execPath, [...WEBHOOKS_CLI, ...args, '--json'], { env, timeout: 30_000 }, (error, stdout, stderr) => {
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, json, stderr });
      });
    });

  it("creates and updates rate_limit, and recovers an endpoint's deliveries", async () => {
    const url = `https://localhost:${receiver.port}/cli/${crypto.randomUUID()}`;
    const created = await cli(['endpoints', 'create', '--url', url, '--events', 'crm', '--rate-limit', '7']);
    expect(created.code).toBe(0);
    expect(created.json.rate_limit).toBe(7);
    const id = created.json.id as string;
    const cleared = await cli(['endpoints', 'update', id, '--rate-limit', 'none']);
    expect(cleared, cleared.stderr).toMatchObject({ code: 0 });
    expect(cleared.json.rate_limit).toBeNull();
    expect((await cli(['endpoints', 'update', id, '--rate-limit', '0'])).code).toBe(2);

    const none = await cli(['endpoints', 'recover', id, '--since', '2026-01-01T00:00:00Z', '--statuses', 'failed,limited']);
    expect(none.code).toBe(0);
    expect(none.json).toMatchObject({ recovered: 0, since: '2026-01-01T00:00:00.000Z', statuses: ['failed', 'limited'] });
    // One exhausted delivery of a real event (this endpoint is unverified, so it holds it once recovered).
    const event = (await call('POST', '/api/v1/events', demandEvent(`cli_${id}`))).body.data;
    const { rows } = await testDb().query<{ id: string }>(
      `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, terminal_reason)
       SELECT $1, $2, id, type, idempotency_key, environment, 'exhausted', 'hold_expired' FROM events
       WHERE account_id = $1 AND id = $3 RETURNING id`,
      [tenant.accountId, id, event.id],
    );
    const one = await cli(['endpoints', 'recover', id, '--since', '2026-01-01T00:00:00Z']);
    expect(one.json).toMatchObject({ recovered: 1, statuses: ['failed', 'exhausted', 'limited'] });
    expect((await call('GET', `/api/v1/webhook_deliveries/${rows[0]!.id}`)).body.data.status).toBe('pending');
    // Paced by the endpoint's health: an unverified endpoint's workflow holds it.
    await eventually(async () => {
      const held = await testDb().query(`SELECT held_since FROM deliveries WHERE id = $1`, [rows[0]!.id]);
      return held.rows[0].held_since !== null;
    });
    const bad = await cli(['endpoints', 'recover', id, '--since', 'yesterday']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid_recovery/);
    expect((await cli(['endpoints', 'recover', id])).code).toBe(2);
  });
});
