/**
 * The MCP server (packages/mcp) as a client runs it: a child process on stdio, driven by the
 * MCP SDK's Client, against the real API with a local HTTPS receiver.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../dev/tools.js';
import { samples } from '../support/catalog-samples.js';
import { createTenant, startTestApi, type Tenant, type TestApi } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';
import { SOURCE_CONDITION } from '../support/webhooks-cli.js';

let api: TestApi;
let receiver: Receiver;
let tenant: Tenant;
let client: Client;
let endpointId: string;
const updates: string[] = [];

const text = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as Array<{ type: string; text: string }>)[0]!.text;
const toolJson = async (name: string, args: Record<string, unknown> = {}) => {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError ?? false, text(result)).toBe(false);
  return JSON.parse(text(result));
};
const resourceJson = async (uri: string) => JSON.parse(((await client.readResource({ uri })).contents[0] as { text: string }).text);

const demand = samples['crm.demand.created']!.data as { after_data: Record<string, unknown> };
/** The sample at another version: a new event (the version is part of its idempotency key). */
const demandAt = (version: number) => ({ type: 'crm.demand.created', data: { ...demand, after_data: { ...demand.after_data, version } } });

const SECRET = 'whsec_mcp_server_test_secret_0001';

beforeAll(async () => {
  [api, receiver, tenant] = await Promise.all([startTestApi({ allowLoopback: true }), startReceiver(), createTenant()]);
  const created = await api.request('POST', '/api/v1/webhooks', {
    key: tenant.key,
    body: { url: `https://receiver.test:${receiver.port}/hooks`, events: ['crm'], secret: SECRET },
  });
  endpointId = created.body.data.id;
  const key = await tenant.keyFor(['webhooks:read', 'webhooks:write', 'events:read']);
  const transport = new StdioClientTransport({
    command: process.execPath,
    // From source, the SDK too (as the CLI's tests run it): never a stale or half-rebuilt dist/.
    args: [`--conditions=${SOURCE_CONDITION}`, '--import', 'tsx', path.join(projectRoot, 'packages/mcp/src/main.ts')],
    cwd: projectRoot,
    env: { ...getDefaultEnvironment(), WEBHOOKS_BASE_URL: api.url, WEBHOOKS_API_KEY: key, WEBHOOKS_MCP_POLL_MS: '100' },
    stderr: 'inherit',
  });
  client = new Client({ name: 'mcp-test', version: '1.0.0' });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
  });
  await client.connect(transport);
});

afterAll(async () => {
  await client?.close();
  await api?.close();
  await receiver?.close();
});

describe('the MCP server', () => {
  it('initializes with tools, resources and resource subscriptions', () => {
    // The version it reports is its package's.
    const { version } = JSON.parse(fs.readFileSync(path.join(projectRoot, 'packages/mcp/package.json'), 'utf8')) as { version: string };
    expect(client.getServerVersion()).toMatchObject({ name: 'webhook-platform', version });
    expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: { subscribe: true } });
  });

  it('lists its six tools', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'get_delivery',
      'get_event',
      'list_deliveries',
      'list_endpoints',
      'read_stream',
      'send_test',
    ]);
  });

  it('lists endpoints, sends a signed test and finds it in the delivery list', async () => {
    const endpoints = await toolJson('list_endpoints');
    expect(endpoints.data.map((e: { id: string }) => e.id)).toContain(endpointId);

    const tested = await toolJson('send_test', { endpoint_id: endpointId });
    expect(tested.data).toEqual({ success: true, response_code: 200, health_status: 'healthy', active: true });
    const post = receiver.received.at(-1)!;
    expect(post.headers['x-webhook-event']).toBe('webhook.test');
    // Signed with the endpoint's secret (SPEC 5): the receiver's own check of the body it got.
    expect(post.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', SECRET).update(post.body).digest('hex'));
    const signed = crypto
      .createHmac('sha256', SECRET)
      .update(`${String(post.headers['webhook-id'])}.${String(post.headers['webhook-timestamp'])}.`)
      .update(post.body)
      .digest('base64');
    expect(post.headers['webhook-signature']).toBe(`v1,${signed}`);

    const deliveries = await toolJson('list_deliveries', { endpoint_id: endpointId, event_type: 'webhook.test', status: 'success' });
    expect(deliveries.data).toHaveLength(1);
    expect(deliveries.data[0]).toMatchObject({ endpoint_id: endpointId, attempts: 1, response_code: 200 });
  });

  it('answers API errors as tool errors with the code', async () => {
    const result = await client.callTool({ name: 'send_test', arguments: { endpoint_id: '00000000-0000-4000-8000-000000000000' } });
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('not_found (HTTP 404)');
  });

  it('serves the event catalog as one resource and one resource per event type', async () => {
    const catalog = await resourceJson('webhooks://event-types');
    expect(catalog.find((t: { name: string }) => t.name === 'crm.demand.created')).toMatchObject({ category: 'crm', in_stream: true });
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toEqual(
      expect.arrayContaining(['webhooks://event-types', 'webhooks://events/live', 'webhooks://event-types/webhook.test']),
    );
    expect(uris.filter((u) => u.startsWith('webhooks://event-types/'))).toHaveLength(catalog.length);
    const one = await resourceJson('webhooks://event-types/crm.demand.created');
    expect(one.schema).toMatchObject({ type: 'object' });
  });

  it('notifies a subscriber of new stream items, from the head of the stream on', async () => {
    // An event stored before the subscription is behind the head: not reported as new.
    const before = await api.request('POST', '/api/v1/events', { key: tenant.key, body: demandAt(1) });
    expect(before.status).toBe(201);

    await client.subscribeResource({ uri: 'webhooks://events/live' });
    const published = await api.request('POST', '/api/v1/events', { key: tenant.key, body: demandAt(2) });
    expect(published.status).toBe(201);

    await expect.poll(() => updates, { timeout: 10_000 }).toContain('webhooks://events/live');
    const live = await resourceJson('webhooks://events/live');
    expect(live).toMatchObject({ watching: true, cursor: published.body.data.cursor });
    expect(live.items.map((i: { id: string }) => i.id)).toEqual([published.body.data.id]);

    const stream = await toolJson('read_stream', { after: '0', limit: 100 });
    expect(stream.data.map((i: { id: string }) => i.id)).toEqual([before.body.data.id, published.body.data.id]);
    expect(stream.paging).toEqual({ cursor: published.body.data.cursor, next: null, has_more: false });

    await client.unsubscribeResource({ uri: 'webhooks://events/live' });
  });

  // Last: the event it publishes would change the stream the subscription test reads from its start.
  it("get_delivery shows a test send's request as the receiver got it; get_event reads a published event", async () => {
    await toolJson('send_test', { endpoint_id: endpointId });
    const post = receiver.received.at(-1)!;
    const delivery = await toolJson('get_delivery', { delivery_id: String(post.headers['webhook-id']) });
    expect(Buffer.from(delivery.data.request.body, 'utf8').equals(post.body)).toBe(true);
    expect(delivery.data.request.headers['x-webhook-signature']).toBe(post.headers['x-webhook-signature']);
    expect(delivery.data.attempts_log).toHaveLength(1);

    const published = await api.request('POST', '/api/v1/events', { key: tenant.key, body: demandAt(901) });
    expect(published.status).toBe(201);
    const event = await toolJson('get_event', { event_id: published.body.data.id });
    expect(event.data).toEqual(published.body.data);
  });
});
