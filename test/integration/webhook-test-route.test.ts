/** POST /api/v1/webhooks/{id}/test against a real local HTTPS receiver. */
import crypto from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { flushLogs, logger } from '../../src/runtime/logger.js';
import {
  createTenant,
  eventually,
  staticResolver,
  startTestApi,
  TEST_HOSTS,
  testDb,
  type Tenant,
  type TestApi,
} from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';

let api: TestApi;
let slowApi: TestApi;
let tenant: Tenant;
let receiver: Receiver;
// A name whose DNS answer the test changes between creation and sending.
const hosts: Record<string, string[]> = { ...TEST_HOSTS, 'rebind.test': ['93.184.215.14'] };

beforeAll(async () => {
  [api, slowApi, tenant, receiver] = await Promise.all([
    startTestApi({ allowLoopback: true, resolver: staticResolver(hosts) }),
    startTestApi({ allowLoopback: true, timeoutMs: 400 }),
    createTenant(),
    startReceiver(),
  ]);
});
afterAll(() => Promise.all([api.close(), slowApi.close(), receiver.close()]));
beforeEach(() => {
  receiver.received.length = 0;
  receiver.reply({ status: 200, body: 'ok' });
});

async function endpoint(body: Record<string, unknown> = {}) {
  const res = await api.request('POST', '/api/v1/webhooks', {
    key: tenant.key,
    body: { url: receiver.url(), events: ['messages'], ...body },
  });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; secret: string };
}

describe('test delivery', () => {
  it('sends a signed webhook.test whose signature verifies over the raw bytes', async () => {
    const ep = await endpoint();
    await api.request('PATCH', `/api/v1/webhooks/${ep.id}`, {
      key: tenant.key,
      body: { headers: { Authorization: 'Bearer receiver-token' } },
    });
    const res = await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { success: true, response_code: 200, health_status: 'healthy', active: true } });

    expect(receiver.received).toHaveLength(1);
    const req = receiver.received[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/hooks');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-webhook-event']).toBe('webhook.test');
    expect(req.headers['x-idempotency-key']).toBe(`test:${ep.id}`);
    expect(req.headers.authorization).toBe('Bearer receiver-token');
    const expected = crypto.createHmac('sha256', ep.secret).update(req.body).digest('hex');
    expect(req.headers['x-webhook-signature']).toBe(expected);
    const body = JSON.parse(req.body.toString('utf8'));
    expect(body).toEqual({
      event: 'webhook.test',
      customer_id: null,
      environment: null,
      message: 'This is a test event sent to verify your webhook endpoint.',
      sent_at: expect.any(String),
    });
    expect(Date.parse(body.sent_at)).not.toBeNaN();

    const read = (await api.request('GET', `/api/v1/webhooks/${ep.id}`, { key: tenant.key })).body.data;
    expect(read).toMatchObject({ health_status: 'healthy', failure_streak: 0, active: true, last_response_code: 200 });
    expect(read.verified_at).not.toBeNull();
    expect(read.last_success_at).not.toBeNull();

    const deliveries = await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${ep.id}&event_type=webhook.test`, {
      key: tenant.key,
    });
    expect(deliveries.body.data).toHaveLength(1);
    expect(deliveries.body.data[0]).toMatchObject({
      event_type: 'webhook.test',
      status: 'success',
      attempts: 1,
      response_code: 200,
      idempotency_key: `test:${ep.id}`,
      environment: null,
      event_id: null,
    });
    const detail = await api.request('GET', `/api/v1/webhook_deliveries/${deliveries.body.data[0].id}`, { key: tenant.key });
    expect(detail.body.data.attempts_log).toEqual([
      {
        number: 1,
        started_at: expect.any(String),
        duration_ms: expect.any(Number),
        response_code: 200,
        error: null,
        response_excerpt: 'ok',
      },
    ]);
  });

  it('signs with the secret valid now: a PATCHed secret takes effect at once', async () => {
    const ep = await endpoint();
    await api.request('PATCH', `/api/v1/webhooks/${ep.id}`, { key: tenant.key, body: { secret: 'rotated-secret-0123456789' } });
    await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    const req = receiver.received[0]!;
    expect(req.headers['x-webhook-signature']).toBe(
      crypto.createHmac('sha256', 'rotated-secret-0123456789').update(req.body).digest('hex'),
    );
    expect(req.headers.authorization).toBeUndefined();
  });

  it.each([
    ['url', () => ({ url: receiver.url('/moved') })],
    ['headers.Authorization', () => ({ headers: { Authorization: 'Bearer changed-mid-test' } })],
  ])('a PATCH of %s committed while the test POST is in flight leaves the endpoint unverified', async (_field, change) => {
    const ep = await endpoint();
    let release!: () => void;
    receiver.reply({ status: 200, body: 'ok', hold: new Promise<void>((r) => (release = r)) });
    const test = api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    await eventually(async () => receiver.received.length === 1);
    const patched = await api.request('PATCH', `/api/v1/webhooks/${ep.id}`, { key: tenant.key, body: change() });
    expect(patched.status).toBe(200);
    expect(patched.body.data.health_status).toBe('unverified');
    release();

    // The receiver's answer is still the test's answer and is audited, but it verified the old configuration only.
    const res = await test;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { success: true, response_code: 200, health_status: 'unverified', active: true } });
    const read = (await api.request('GET', `/api/v1/webhooks/${ep.id}`, { key: tenant.key })).body.data;
    expect(read).toMatchObject({ health_status: 'unverified', verified_at: null, last_response_code: 200 });
    const audit = await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${ep.id}&event_type=webhook.test`, { key: tenant.key });
    expect(audit.body.data.map((d: { status: string }) => d.status)).toEqual(['success']);

    // A test of the new configuration verifies it.
    receiver.reply({ status: 200, body: 'ok' });
    const again = await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    expect(again.body.data).toEqual({ success: true, response_code: 200, health_status: 'healthy', active: true });
  });

  it('a 2xx test reactivates a deactivated or paused endpoint', async () => {
    const ep = await endpoint();
    await api.request('PATCH', `/api/v1/webhooks/${ep.id}`, { key: tenant.key, body: { active: false } });
    await testDb().query(`UPDATE endpoints SET health_status = 'paused', paused_at = now(), failure_streak = 15 WHERE id = $1`, [ep.id]);
    receiver.reply({ status: 204 });
    const res = await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    expect(res.body.data).toEqual({ success: true, response_code: 204, health_status: 'healthy', active: true });
    const read = (await api.request('GET', `/api/v1/webhooks/${ep.id}`, { key: tenant.key })).body.data;
    expect(read).toMatchObject({ failure_streak: 0, paused_at: null, active: true });
  });

  it('a non-2xx answer is 502 test_delivery_failed and moves neither streak nor health', async () => {
    const ep = await endpoint();
    await testDb().query(`UPDATE endpoints SET health_status = 'degraded', failure_streak = 6, verified_at = now() WHERE id = $1`, [ep.id]);
    receiver.reply({ status: 500, body: 'x'.repeat(10_000) });
    const res = await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('test_delivery_failed');
    const read = (await api.request('GET', `/api/v1/webhooks/${ep.id}`, { key: tenant.key })).body.data;
    expect(read).toMatchObject({ health_status: 'degraded', failure_streak: 6, last_response_code: 500 });
    const list = await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${ep.id}&status=failed`, { key: tenant.key });
    expect(list.body.data).toHaveLength(1);
    const detail = await api.request('GET', `/api/v1/webhook_deliveries/${list.body.data[0].id}`, { key: tenant.key });
    expect(detail.body.data.attempts_log[0]).toMatchObject({ response_code: 500, error: 'non_2xx' });
    expect(detail.body.data.attempts_log[0].response_excerpt).toHaveLength(4096);
  });

  it('redirects are failures and are not followed', async () => {
    const ep = await endpoint();
    receiver.reply({ status: 302, headers: { location: receiver.url('/elsewhere') } });
    const res = await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    expect(res.status).toBe(502);
    expect(receiver.received.map((r) => r.path)).toEqual(['/hooks']);
  });

  it('a slow receiver times out', async () => {
    const res0 = await slowApi.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      body: { url: receiver.url('/slow'), events: ['messages'] },
    });
    receiver.reply({ status: 200, delayMs: 2_000 });
    const res = await slowApi.request('POST', `/api/v1/webhooks/${res0.body.data.id}/test`, { key: tenant.key });
    expect(res.status).toBe(502);
    expect(res.body.error.message).toContain('timeout');
    const detail = await slowApi.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${res0.body.data.id}`, { key: tenant.key });
    const attempt = (await slowApi.request('GET', `/api/v1/webhook_deliveries/${detail.body.data[0].id}`, { key: tenant.key })).body.data
      .attempts_log[0];
    expect(attempt).toMatchObject({ error: 'timeout', response_code: null });
    expect(attempt.duration_ms).toBeLessThan(1_900);
  });

  it('a connection refused is a connection_error', async () => {
    const ep = await endpoint({ url: 'https://receiver.test:1/hooks' });
    const res = await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
    expect(res.status).toBe(502);
    expect(res.body.error.message).toContain('connection_error');
  });

  it('an untrusted certificate is a tls_error', async () => {
    const strict = await startTestApi({ allowLoopback: true });
    const saved = process.env.NODE_EXTRA_CA_CERTS;
    try {
      delete process.env.NODE_EXTRA_CA_CERTS;
      const noCa = await startTestApi({ allowLoopback: true });
      try {
        const created = await noCa.request('POST', '/api/v1/webhooks', {
          key: tenant.key,
          body: { url: receiver.url(), events: ['messages'] },
        });
        const res = await noCa.request('POST', `/api/v1/webhooks/${created.body.data.id}/test`, { key: tenant.key });
        expect(res.status).toBe(502);
        expect(res.body.error.message).toContain('tls_error');
      } finally {
        await noCa.close();
      }
    } finally {
      process.env.NODE_EXTRA_CA_CERTS = saved;
      await strict.close();
    }
  });

  it('refuses at send time a name that now resolves to a private address', async () => {
    const created = await api.request('POST', '/api/v1/webhooks', {
      key: tenant.key,
      body: { url: 'https://rebind.test/hooks', events: ['messages'] },
    });
    expect(created.status).toBe(201);
    hosts['rebind.test'] = ['10.0.0.7'];
    try {
      const res = await api.request('POST', `/api/v1/webhooks/${created.body.data.id}/test`, { key: tenant.key });
      expect(res.status).toBe(502);
      expect(res.body.error.message).toContain('blocked_destination');
      const list = await api.request('GET', `/api/v1/webhook_deliveries?endpoint_id=${created.body.data.id}`, { key: tenant.key });
      const detail = await api.request('GET', `/api/v1/webhook_deliveries/${list.body.data[0].id}`, { key: tenant.key });
      expect(detail.body.data.attempts_log[0].error).toBe('blocked_destination');
    } finally {
      hosts['rebind.test'] = ['93.184.215.14'];
    }
  });

  it('logs neither the secret nor the Authorization value, at any level', async () => {
    const captured: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      captured.push(String(chunk));
      return true;
    });
    const level = logger.level;
    logger.level = 'trace';
    try {
      const secret = `whsec_log_${crypto.randomBytes(16).toString('hex')}`;
      const auth = `Bearer log-${crypto.randomBytes(8).toString('hex')}`;
      const ep = await endpoint({ secret });
      await api.request('PATCH', `/api/v1/webhooks/${ep.id}`, {
        key: tenant.key,
        body: { headers: { Authorization: auth }, secret: `${secret}-2` },
      });
      await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
      receiver.reply({ status: 500 });
      await api.request('POST', `/api/v1/webhooks/${ep.id}/test`, { key: tenant.key });
      await api.request('POST', '/api/v1/webhooks', {
        key: tenant.key,
        body: { url: receiver.url(), events: ['messages'], secret: `${secret}\n` },
      });
      flushLogs(); // request lines are written in batches
      const text = captured.join('');
      expect(text).toContain('"msg":"request"');
      expect(text).not.toContain(secret);
      expect(text).not.toContain(auth);
      expect(text).not.toContain(tenant.key);
    } finally {
      logger.level = level;
      spy.mockRestore();
    }
  });

  it('without the loopback allowance the local receiver is refused at creation', async () => {
    const strict = await startTestApi();
    try {
      const res = await strict.request('POST', '/api/v1/webhooks', {
        key: tenant.key,
        body: { url: receiver.url(), events: ['messages'] },
      });
      expect(res.status).toBe(422);
      expect(res.body.error.message).toContain('loopback');
    } finally {
      await strict.close();
    }
  });
});
