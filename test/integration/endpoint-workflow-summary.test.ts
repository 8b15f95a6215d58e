import type { AccountId, EndpointId } from '../../src/core/ids.js';
/**
 * The line the Temporal Web UI shows for an endpoint workflow (its static summary and details),
 * set when the API's signalWithStart starts it. On the dev server, since the time-skipping test
 * server keeps no user metadata. No worker polls the task queue: only the start is looked at.
 */
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { endpointWorkflows } from '../../src/delivery/workflow-client.js';
import { endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';

let connection: Connection;
let client: Client;
const started: string[] = [];

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('devServerAddress') });
  client = new Client({ connection });
});
afterAll(async () => {
  for (const id of started)
    await client.workflow
      .getHandle(id)
      .terminate('test over')
      .catch(() => {});
  await connection.close();
});

describe('endpoint workflow summary in the Web UI', () => {
  it('names the endpoint by url host and path (never its query) and its Account; without a url, by its id', async () => {
    const workflows = endpointWorkflows(client, `summary-${crypto.randomUUID()}`);
    const [withUrl, withoutUrl] = [crypto.randomUUID() as EndpointId, crypto.randomUUID() as EndpointId];
    const accountId = crypto.randomUUID() as AccountId;
    started.push(endpointWorkflowId(withUrl), endpointWorkflowId(withoutUrl));

    await workflows.notify(withUrl, accountId, 'created', { url: 'https://user:pw@hooks.example.com:8443/acme/orders?token=secret#x' });
    const described = await client.workflow.getHandle(endpointWorkflowId(withUrl)).describe();
    expect(await described.staticSummary()).toBe(`hooks.example.com:8443/acme/orders · account ${accountId}`);
    const details = await described.staticDetails();
    expect(details).toContain(`Endpoint \`${withUrl}\` of Account \`${accountId}\`, posting to hooks.example.com:8443/acme/orders.`);
    expect(details).not.toMatch(/secret|pw@/);

    // A workflow started by a wake-up (the due router knows no url) still names its endpoint and Account.
    await workflows.wake(withoutUrl, accountId);
    const woken = await client.workflow.getHandle(endpointWorkflowId(withoutUrl)).describe();
    expect(await woken.staticSummary()).toBe(`endpoint ${withoutUrl} · account ${accountId}`);

    // A later signal to the running workflow does not change what it started with.
    await workflows.notify(withoutUrl, accountId, 'updated', { url: 'https://other.example.com/x' });
    expect(await (await client.workflow.getHandle(endpointWorkflowId(withoutUrl)).describe()).staticSummary()).toBe(
      `endpoint ${withoutUrl} · account ${accountId}`,
    );
  });
});
