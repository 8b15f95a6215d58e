/** The operator CLI as scripts run it (`npm run cli`, which adds --json): a child process against DATABASE_URL. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { projectRoot } from '../../dev/tools.js';
import { samples } from '../support/catalog-samples.js';
import { startTestApi, testDb, type TestApi } from '../support/harness.js';

const exec = promisify(execFile);
const tsx = path.join(projectRoot, 'node_modules', '.bin', 'tsx');

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(tsx, [path.join(projectRoot, 'cli', 'main.ts'), '--json', ...args], {
      env: { ...process.env, DATABASE_URL: inject('databaseUrl') },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('operator CLI', () => {
  it('creates an Account, a customer, a channel account and a key that the API accepts', async () => {
    const account = await cli(
      'account',
      'create',
      '--name',
      'CLI Co',
      '--owner-email',
      'ops@cli.test',
      '--plan',
      'free',
      '--created-at',
      '2026-09-30T12:00:00Z',
    );
    expect(account.code).toBe(0);
    const a = JSON.parse(account.stdout);
    expect(a).toMatchObject({ name: 'CLI Co', owner_email: 'ops@cli.test', plan: 'free', created_at: '2026-09-30T12:00:00.000Z' });

    const customer = JSON.parse((await cli('customer', 'create', '--account', a.id, '--name', 'Customer A')).stdout);
    expect(customer.account_id).toBe(a.id);
    const ca = await cli(
      'channel-account',
      'create',
      '--account',
      a.id,
      '--customer',
      customer.id,
      '--channel',
      'chatapp',
      '--display',
      '+1 555 0100',
      '--phone-number-id',
      `pn-${a.id}`,
      '--waba-id',
      'waba-1',
      '--environment',
      'sandbox',
    );
    expect(JSON.parse(ca.stdout)).toMatchObject({
      channel: 'chatapp',
      environment: 'sandbox',
      customer_id: customer.id,
      waba_id: 'waba-1',
    });

    const key = JSON.parse(
      (await cli('key', 'create', '--account', a.id, '--env', 'sandbox', '--scopes', 'webhooks:read,events:read')).stdout,
    );
    expect(key).toMatchObject({ environment: 'sandbox', scopes: ['webhooks:read', 'events:read'] });
    expect(key.key).toMatch(/^wh_sandbox_/);
    expect((await api.request('GET', '/api/v1/webhooks', { key: key.key })).status).toBe(200);
    expect((await api.request('POST', '/api/v1/webhooks', { key: key.key, body: {} })).status).toBe(403);

    const { rows } = await testDb().query(`SELECT a::text AS dump FROM api_keys a WHERE id = $1`, [key.id]);
    expect(rows[0].dump).not.toContain(key.key);
  });

  it('deletes a channel account with its events, and an Account with everything', async () => {
    const a = JSON.parse((await cli('account', 'create', '--name', 'Gone Co', '--owner-email', 'ops@gone.test')).stdout);
    const key = JSON.parse(
      (await cli('key', 'create', '--account', a.id, '--env', 'live', '--scopes', 'webhooks:read,webhooks:write,events:read,events:write'))
        .stdout,
    ).key;
    const ca = JSON.parse(
      (await cli('channel-account', 'create', '--account', a.id, '--channel', 'photoapp', '--display', '@gone')).stdout,
    );
    const ep = (
      await api.request('POST', '/api/v1/webhooks', { key, body: { url: 'https://public.example/h', events: ['messages', 'crm'] } })
    ).body.data;
    await testDb().query(`UPDATE endpoints SET health_status = 'healthy' WHERE id = $1`, [ep.id]);
    const sample = samples['photoapp.message.received']!;
    const photo = await api.request('POST', '/api/v1/events', {
      key,
      body: { type: 'photoapp.message.received', data: sample.data, channel_account_id: ca.id },
    });
    const crm = await api.request('POST', '/api/v1/events', {
      key,
      body: { type: 'crm.demand.created', data: samples['crm.demand.created']!.data },
    });
    expect([photo.status, crm.status]).toEqual([201, 201]);

    const removed = await cli('channel-account', 'delete', '--id', ca.id);
    expect(JSON.parse(removed.stdout)).toEqual({ deleted: ca.id, events_removed: 1 });
    const stream = await api.request('GET', '/api/v1/events', { key });
    expect(stream.body.data.map((e: { cursor: string; type: string }) => [e.cursor, e.type])).toEqual([['2', 'crm.demand.created']]);
    const { rows } = await testDb().query(`SELECT status, terminal_reason FROM deliveries WHERE event_id = $1`, [photo.body.data.id]);
    expect(rows).toEqual([{ status: 'exhausted', terminal_reason: 'event_deleted' }]);

    expect((await cli('account', 'delete', '--id', a.id)).code).toBe(0);
    expect((await api.request('GET', '/api/v1/events', { key })).status).toBe(401);
    const { rows: left } = await testDb().query(`SELECT count(*)::int AS n FROM events WHERE account_id = $1`, [a.id]);
    expect(left[0].n).toBe(0);
    expect((await cli('account', 'delete', '--id', a.id)).code).not.toBe(0);
  });

  it('fails with a clear message on stderr and a non-zero exit', async () => {
    const badScope = await cli(
      'key',
      'create',
      '--account',
      '00000000-0000-4000-8000-000000000000',
      '--env',
      'live',
      '--scopes',
      'webhooks:read,root',
    );
    expect(badScope.code).not.toBe(0);
    expect(badScope.stdout).toBe('');
    expect(badScope.stderr).toContain('--scopes');
    const noAccount = await cli('customer', 'create', '--account', '00000000-0000-4000-8000-000000000000', '--name', 'x');
    expect(noAccount.code).not.toBe(0);
    expect(noAccount.stderr).toContain('does not exist');
    const unknown = await cli('account', 'explode');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('usage');
  });
});
