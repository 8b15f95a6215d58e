/**
 * The client kit against the real service: the production API and worker (startApi, runWorker)
 * on the Temporal dev server, in dev mode (WEBHOOKS_DEV_MODE) so they deliver to loopback
 * receivers: the reference receiver (examples/receiver) and `webhooks listen` run as a child
 * process, whose own CA the service trusts through WEBHOOKS_DEV_CA_FILE. Everything is done
 * through the SDK, or through the CLI as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type pg from 'pg';
import { signatureFor, WebhookPlatform, WebhookPlatformError } from '@webhook-platform/sdk';
import { startApi, type RunningApi } from '../../src/api/server.js';
import { createReceiverApp, ensureSchema, listen } from '../../examples/receiver/receiver.js';
import { loadConfig } from '../../src/runtime/config.js';
import { runWorker } from '../../src/worker/main.js';
import { createTenant, eventually, type Tenant } from '../support/harness.js';
import { demandEvent, isolatedPool } from '../support/kit.js';
import { runWebhooksCli, WEBHOOKS_CLI, type CliRun } from '../support/webhooks-cli.js';

const LISTEN_SECRET = 'whsec_listen_secret_for_the_e2e_test';
const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-cli-'));
const cliEnv = { ...process.env, WEBHOOKS_CONFIG: path.join(configDir, 'config.json'), WEBHOOKS_API_KEY: '', WEBHOOKS_BASE_URL: '' };

let api: RunningApi;
let tenant: Tenant;
let db: pg.Pool;
let receiver: Awaited<ReturnType<typeof listen>>;
const receiverSecrets: string[] = [];
let listener: ChildProcess;
const heard: Array<Record<string, any>> = [];
let listenInfo: { listening: string; ca_file: string; env: Record<string, string> };
const stopWorker = new AbortController();
let worker: Promise<void>;
let client: WebhookPlatform;

function cli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runWebhooksCli(args, { ...cliEnv, WEBHOOKS_API_KEY: tenant.key, WEBHOOKS_BASE_URL: `${api.url}/api/v1`, ...env });
}

/** Starts `webhooks listen` and waits for its first JSON line (URL and CA file). */
async function startListen(): Promise<void> {
  listener = spawn(
    process.execPath,
    [...WEBHOOKS_CLI, 'listen', '--port', '0', '--secret', 'whsec_some_retired_secret_value', '--secret', LISTEN_SECRET, '--json'],
    { env: cliEnv, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let buffered = '';
  let ready: (v: void) => void;
  const started = new Promise<void>((r) => (ready = r));
  listener.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      if (line.listening) {
        listenInfo = line;
        ready();
      } else heard.push(line);
    }
  });
  await started;
}

beforeAll(async () => {
  [tenant, db] = await Promise.all([createTenant(), isolatedPool(), startListen()]);
  await ensureSchema(db);
  const { cert, key } = inject('tls');
  receiver = await listen(createReceiverApp({ db, secrets: receiverSecrets }), { port: 0, tls: { cert, key } });
  // What `webhooks listen` told to set, as a developer would.
  const config = {
    ...loadConfig(listenInfo.env),
    port: 0,
    databaseUrl: inject('databaseUrl'),
    temporalAddress: inject('devServerAddress'),
    taskQueue: `kit-${crypto.randomUUID()}`,
    encryptionKey: crypto.randomBytes(32).toString('base64'),
    // Test files share one database: a sweep would wake other files' endpoints on this task queue.
    dueSweepMs: 0,
    // Speed only, and the suite starts many services side by side (test/support/running-service.ts).
    warmUpRequests: 0,
    // Nor may a maintenance run (one Schedule per namespace) touch other files' photoapp tokens.
    maintenanceSchedule: false,
  };
  expect(config).toMatchObject({ devMode: true, devCaFile: listenInfo.ca_file });
  worker = runWorker(config, { signal: stopWorker.signal, workflowBundlePath: inject('workflowBundlePath') });
  api = await startApi(config, { host: '127.0.0.1' });
  client = new WebhookPlatform({ baseUrl: `${api.url}/api/v1`, apiKey: tenant.key });
});
afterAll(async () => {
  listener?.kill('SIGTERM');
  await api?.close();
  stopWorker.abort();
  await worker;
  await receiver?.close();
  await db?.end();
  fs.rmSync(configDir, { recursive: true, force: true });
});

describe('SDK against the service', () => {
  let endpointId: string;

  it('creates an endpoint on the reference receiver, tests it, and the receiver gets a published event verified', async () => {
    const created = await client.webhooks.create({ url: `https://127.0.0.1:${receiver.port}/webhooks`, events: ['crm'] });
    expect(created).toMatchObject({ health_status: 'unverified', active: true });
    expect(created.secret).toMatch(/^whsec_/);
    endpointId = created.id;
    // Until the receiver knows the generated secret, the test is refused with 401 (a 502 for the API).
    const refused = await client.webhooks.test(endpointId).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WebhookPlatformError);
    expect(refused).toMatchObject({ status: 502, code: 'test_delivery_failed' });
    receiverSecrets.push(created.secret);
    expect(await client.webhooks.test(endpointId)).toEqual({ success: true, response_code: 200, health_status: 'healthy', active: true });

    const { event, created: isNew } = await client.events.publish(demandEvent('e2e_1'));
    expect(isNew).toBe(true);
    expect((await client.events.publish(demandEvent('e2e_1'))).created).toBe(false);
    // Applied by the receiver, which verified the signature of the raw bytes with the SDK.
    const effect = await eventually(
      async () => (await db.query(`SELECT * FROM receiver_effects WHERE key = 'crm:demand:dem_kit_e2e_1:1'`)).rows[0],
    );
    expect(effect).toMatchObject({ source: 'webhook', event_type: 'crm.demand.created' });
    expect(effect.payload).toMatchObject({ event: 'crm.demand.created', entity_id: 'dem_kit_e2e_1', environment: 'live' });

    // The audit list shows it delivered, and the refused and the passed tests.
    const delivered = await eventually(async () =>
      (await client.deliveries.list({ endpoint_id: endpointId, event_type: 'crm.demand.created' })).data.find(
        (d) => d.status === 'success',
      ),
    );
    expect(delivered).toMatchObject({ event_id: event.id, response_code: 200, attempts: 1, idempotency_key: 'crm:demand:dem_kit_e2e_1:1' });
    const detail = await client.deliveries.get(delivered.id);
    expect(detail.attempts_log).toHaveLength(1);
    expect(detail.attempts_log[0]).toMatchObject({ number: 1, response_code: 200, error: null });
    const tests = await client.deliveries.list({ endpoint_id: endpointId, event_type: 'webhook.test' });
    expect(tests.data.map((d) => [d.status, d.response_code])).toEqual([
      ['success', 200],
      ['failed', 401],
    ]);
    expect(tests.paging).toMatchObject({ next: null });

    // The stream has it; the reader's cursor is the last paging.cursor.
    const stream = client.events.stream({ after: '0' });
    const items = [];
    for await (const item of stream) items.push(item);
    expect(items.map((i) => i.id)).toContain(event.id);
    expect(stream.cursor).toBe(stream.lastPaging!.cursor);
    expect(stream.cursor).toBe(items.at(-1)!.cursor);
  });

  it('reads, updates, lists and deletes endpoints, and lists the catalog', async () => {
    expect((await client.webhooks.get(endpointId)).health_status).toBe('healthy');
    const updated = await client.webhooks.update(endpointId, { events: ['crm', 'statuses'] });
    expect([...updated.events].sort()).toEqual(['crm', 'statuses']);
    expect(updated.health_status).toBe('healthy'); // events alone keep the verification
    const page = await client.webhooks.list({ limit: 100 });
    expect(page.data.map((e) => e.id)).toContain(endpointId);
    const types = await client.eventTypes.list();
    expect(types.find((t) => t.name === 'crm.demand.created')).toMatchObject({ category: 'crm', in_stream: true });
    const extra = await client.webhooks.create({ url: `https://127.0.0.1:${receiver.port}/other`, events: ['messages'], active: false });
    await client.webhooks.delete(extra.id);
    await expect(client.webhooks.get(extra.id)).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });

  it("turns the service's errors into WebhookPlatformError", async () => {
    await expect(client.events.list({ after: '-1' })).rejects.toMatchObject({ status: 422, code: 'invalid_cursor' });
    await expect(client.deliveries.list({ status: 'nope' })).rejects.toMatchObject({ status: 422, code: 'invalid_status' });
    await expect(new WebhookPlatform({ baseUrl: `${api.url}/api/v1`, apiKey: 'wh_live_unknown' }).webhooks.list()).rejects.toMatchObject({
      status: 401,
      code: 'unauthorized',
    });
    const readOnly = new WebhookPlatform({ baseUrl: `${api.url}/api/v1`, apiKey: await tenant.keyFor(['webhooks:read']) });
    await expect(readOnly.events.publish(demandEvent('scope'))).rejects.toMatchObject({ status: 403, code: 'insufficient_scope' });
    await expect(client.contacts.delete('c_nobody')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });
});

describe('CLI against the service', () => {
  it('login stores the key and base URL in a 0600 file', async () => {
    const res = await cli(['login', '--key', tenant.key, '--base-url', `${api.url}/api/v1`, '--json'], {
      WEBHOOKS_API_KEY: '',
      WEBHOOKS_BASE_URL: '',
    });
    expect(res.code).toBe(0);
    const file = cliEnv.WEBHOOKS_CONFIG;
    expect(res.json).toEqual({ config: file, base_url: `${api.url}/api/v1` });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ api_key: tenant.key, base_url: `${api.url}/api/v1` });
    // The stored login is used when the environment gives nothing.
    expect((await cli(['event-types', '--json'], { WEBHOOKS_API_KEY: '', WEBHOOKS_BASE_URL: '' })).code).toBe(0);
    // A wrong key is refused and not stored.
    const bad = await cli(['login', '--key', 'wh_live_wrong', '--base-url', `${api.url}/api/v1`], {
      WEBHOOKS_API_KEY: '',
      WEBHOOKS_BASE_URL: '',
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('unauthorized');
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).api_key).toBe(tenant.key);
  });

  it('creates and tests an endpoint on `webhooks listen`, which prints the published event, verified', async () => {
    const created = await cli([
      'endpoints',
      'create',
      '--url',
      listenInfo.listening,
      '--events',
      'crm',
      '--secret',
      LISTEN_SECRET,
      '--json',
    ]);
    expect(created.code).toBe(0);
    expect(created.json).toMatchObject({ url: listenInfo.listening, secret: LISTEN_SECRET, health_status: 'unverified' });
    const id = created.json.id as string;

    const tested = await cli(['endpoints', 'test', id, '--json']);
    expect(tested).toMatchObject({ code: 0, json: { success: true, health_status: 'healthy' } });
    expect(heard.find((h) => h.event === 'webhook.test')).toMatchObject({ verified: true, idempotency_key: `test:${id}` });

    const { event } = await client.events.publish(demandEvent('e2e_listen'));
    const got = await eventually(async () =>
      heard.find((h) => h.event === 'crm.demand.created' && h.body.entity_id === 'dem_kit_e2e_listen'),
    );
    expect(got).toMatchObject({ verified: true, duplicate: false, idempotency_key: 'crm:demand:dem_kit_e2e_listen:1' });

    const listed = await cli(['endpoints', 'list', '--json']);
    expect(listed.code).toBe(0);
    expect(listed.json.data.map((e: { id: string }) => e.id)).toContain(id);
    const human = await cli(['endpoints', 'list']);
    expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+URL\s+EVENTS\s+ACTIVE\s+HEALTH\s+STREAK$/);

    const deliveries = await eventually(async () => {
      const res = await cli([
        'deliveries',
        'list',
        '--endpoint',
        id,
        '--event-type',
        'crm.demand.created',
        '--status',
        'success',
        '--limit',
        '5',
        '--json',
      ]);
      return res.json?.data.length === 1 ? res : undefined;
    });
    expect(deliveries.json.data[0]).toMatchObject({ event_id: event.id, response_code: 200 });
    const one = await cli(['deliveries', 'get', deliveries.json.data[0].id, '--json']);
    expect(one.json.attempts_log).toHaveLength(1);

    const tail = await cli(['events', 'tail', '--after', '0', '--json']);
    expect(tail.code).toBe(0);
    const lines = tail.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id)).toContain(event.id);
    expect(tail.stderr).toContain(`resume with --after ${lines.at(-1).cursor}`);
    const later = await cli(['events', 'tail', '--after', lines.at(-1).cursor, '--json']);
    expect(later.stdout).toBe('');

    const types = await cli(['event-types', '--json']);
    expect(types.json.map((t: { name: string }) => t.name)).toContain('crm.demand.created');
    expect((await cli(['endpoints', 'delete', id, '--json'])).code).toBe(0);
  });

  it('listen refuses a bad signature with 401 and a missing X-Idempotency-Key with 400', async () => {
    const post = (headers: Record<string, string>, body: string) =>
      new Promise<number>((resolve, reject) => {
        const req = https.request(listenInfo.listening, { method: 'POST', headers, ca: fs.readFileSync(listenInfo.ca_file) }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end(body);
      });
    const body = '{"event":"crm.demand.created"}';
    expect(await post({ 'x-webhook-signature': signatureFor(body, 'whsec_not_the_secret_at_all'), 'x-idempotency-key': 'k' }, body)).toBe(
      401,
    );
    expect(await post({ 'x-webhook-signature': signatureFor(body, LISTEN_SECRET) }, body)).toBe(400);
    expect(await post({ 'x-webhook-signature': signatureFor(body, LISTEN_SECRET), 'x-idempotency-key': 'k' }, body)).toBe(200);
  });

  it('exits 1 on an API error, 2 on a usage error, 3 on a network error', async () => {
    const missing = await cli(['endpoints', 'get', crypto.randomUUID(), '--json']);
    expect(missing.code).toBe(1);
    expect(missing.json).toMatchObject({ error: { status: 404, code: 'not_found' } });
    expect((await cli(['deliveries', 'list', '--limit', 'many'])).code).toBe(2);
    expect((await cli(['endpoints', 'frobnicate'])).code).toBe(2);
    expect((await cli(['endpoints', 'list'], { WEBHOOKS_API_KEY: '', WEBHOOKS_CONFIG: path.join(configDir, 'none.json') })).code).toBe(2);
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const down = await cli(['endpoints', 'list', '--json'], { WEBHOOKS_BASE_URL: `http://127.0.0.1:${port}/api/v1` });
    expect(down.code).toBe(3);
    expect(down.json).toMatchObject({ error: { status: 0, code: 'network_error' } });
  });
});
