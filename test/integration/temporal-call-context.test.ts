import type { AccountId, EndpointId } from '../../src/core/ids.js';
/**
 * temporalCall (src/delivery/workflow-client.ts): the Temporal connection's AsyncLocalStorage is on only
 * while a call through it is in flight, so that a process whose requests never call Temporal
 * (the API's publish path) runs no async hook on its promises; a call still carries its
 * deadline across its awaits. On the dev server.
 */
import crypto from 'node:crypto';
import { isGrpcDeadlineError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { connectTemporal, endpointWorkflows, temporalCall } from '../../src/delivery/workflow-client.js';
import { ensureMaintenanceScheduleBeside } from '../../src/worker/maintenance-schedule.js';
import { endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';

let temporal: Awaited<ReturnType<typeof connectTemporal>>;

beforeAll(async () => {
  temporal = await connectTemporal(inject('devServerAddress'), 'default');
});
afterAll(async () => {
  await temporal.connection.close();
});

/** Node 20's AsyncLocalStorage keeps whether it is enabled (its async hooks run) in `enabled`. */
const storageOn = () => (temporal.connection.callContextStorage as unknown as { enabled?: boolean }).enabled;

describe('temporalCall', () => {
  it('leaves the connection context off after connecting and after each call, on during one', async () => {
    expect(storageOn()).toBe(false);
    let during: boolean | undefined;
    await temporalCall(temporal.connection, () =>
      temporal.connection.withDeadline(Date.now() + 5_000, async () => {
        await new Promise((r) => setTimeout(r, 5));
        during = storageOn();
        return temporal.connection.workflowService.getSystemInfo({});
      }),
    );
    expect(during).toBe(true);
    expect(storageOn()).toBe(false);
  });

  it('keeps the context on while another call is still in flight', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = temporalCall(temporal.connection, () => temporal.connection.withDeadline(Date.now() + 5_000, () => held));
    await temporalCall(temporal.connection, () => temporal.connection.workflowService.getSystemInfo({}));
    expect(storageOn()).toBe(true);
    release();
    await slow;
    expect(storageOn()).toBe(false);
  });

  it("a call's deadline still reaches its request after awaits", async () => {
    const err = await temporalCall(temporal.connection, () =>
      temporal.connection.withDeadline(Date.now() + 1, async () => {
        await new Promise((r) => setTimeout(r, 20));
        return temporal.connection.workflowService.getSystemInfo({});
      }),
    ).catch((e: unknown) => e);
    expect(isGrpcDeadlineError(err)).toBe(true);
  });

  it('signals through endpointWorkflows leave it off', async () => {
    const workflows = endpointWorkflows(temporal.client, `ctx-${crypto.randomUUID()}`);
    const endpointId = crypto.randomUUID() as EndpointId;
    await workflows.notify(endpointId, crypto.randomUUID() as AccountId, 'created');
    expect(storageOn()).toBe(false);
    await temporal.client.workflow
      .getHandle(endpointWorkflowId(endpointId))
      .terminate('test over')
      .catch(() => {});
  });

  it("the worker's maintenance Schedule, ensured at its start, leaves it off", async () => {
    const scheduleId = `ctx-schedule-${crypto.randomUUID()}`;
    const ensured = ensureMaintenanceScheduleBeside(temporal.client, scheduleId, scheduleId);
    await ensured.stop();
    expect(storageOn()).toBe(false);
    await temporalCall(temporal.connection, () => temporal.client.schedule.getHandle(scheduleId).delete());
  });
});
