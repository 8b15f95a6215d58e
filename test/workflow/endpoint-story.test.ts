/**
 * What an operator reads in the Temporal Web UI, read back through the client as the UI reads
 * it: the workflow's current details (the `__temporal_workflow_metadata` query) and the
 * summaries on its timers and activities (user metadata in the history), as a real endpoint
 * fails, degrades, is deactivated and recovers, with time skipped between the steps.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { createTenant } from '../support/harness.js';
import { deliveryTestBed } from '../support/delivery-test-bed.js';

const bed = deliveryTestBed();
const { EventType } = temporal.api.enums.v1;

async function details(endpointId: string): Promise<string> {
  return (await bed.handle(endpointId).query(workflowMetadataQuery)).currentDetails ?? '';
}

/** The summaries of the history's events of one type, oldest first. */
async function summaries(endpointId: string, type: temporal.api.enums.v1.EventType): Promise<string[]> {
  const events = (await bed.handle(endpointId).fetchHistory()).events ?? [];
  return events
    .filter((e) => e.eventType === type && e.userMetadata?.summary)
    .map((e) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary as never));
}

/** Skips the server's clock to just past the endpoint's next POST, and waits for its workflow. */
async function skipToNextPost(endpointId: string) {
  const next = (await bed.endpointRow(endpointId)).next_attempt_at as Date;
  await bed.env.sleep(Math.max(0, next.getTime() - (await bed.env.currentTimeMs())) + 1_000);
  await bed.idle(endpointId);
}

describe('the endpoint workflow tells its story to the Web UI (time skipping)', () => {
  it('keeps its current details and the summaries of its timers and activities true as the endpoint fails, degrades, is deactivated and recovers', async () => {
    const tenant = await createTenant();
    const path = bed.uniquePath('story');
    const endpointId = await bed.verifiedEndpoint(tenant, `${path}?token=never-shown`);
    bed.receiver.reply({ status: 500, body: 'down' });
    await bed.publish(tenant, 1);
    await bed.publish(tenant, 2);
    await bed.workflows().notify(endpointId, tenant.accountId, 'created');
    await bed.settled(endpointId, 2, (d) => d.status === 'failed' && d.attempts === 1);
    await bed.idle(endpointId);

    // The first failure: streak 1, the next POST one minute after it, both deliveries still owed.
    let text = await details(endpointId);
    expect(text).toContain(`**receiver.test:${bed.receiver.port}${path}** · account \`${tenant.accountId}\``);
    expect(text).not.toContain('never-shown');
    expect(text).toContain('- **health**: healthy, active: sending, one POST at a time');
    expect(text).toContain('- **failure streak**: 1 since ');
    expect(text).toMatch(/- \*\*next POST\*\*: \S+Z \(retry 1 of the curve: 1 min after the last failure\)/);
    expect(text).toContain('- **deliveries owed**: 2 waiting');
    expect(text).toMatch(/- \*\*last failure\*\*: \S+Z, HTTP 500 \(non_2xx\)/);
    // The timer waits what is left of the minute when the workflow sets it: on a loaded machine that is under a minute.
    expect((await summaries(endpointId, EventType.EVENT_TYPE_TIMER_STARTED)).at(-1)).toMatch(
      /^next POST in (1 min|\d+ s): retry 1 of the curve: 1 min after the last failure$/,
    );
    const activities = await summaries(endpointId, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(activities).toContain('deliver due: concurrent lanes until the first failure');
    expect(activities.some((s) => /^record health: healthy, streak 1, next POST \S+Z$/.test(s))).toBe(true);

    // Four more failures on the curve: degraded at 5, the next POST 16 minutes after the last failure.
    for (let i = 0; i < 4; i++) await skipToNextPost(endpointId);
    text = await details(endpointId);
    expect(text).toContain('- **health**: degraded, active: sending, one POST at a time');
    expect(text).toContain('- **failure streak**: 5 since ');
    expect(text).toContain('(retry 5 of the curve: 16 min after the last failure)');
    expect((await summaries(endpointId, EventType.EVENT_TYPE_TIMER_STARTED)).at(-1)).toMatch(
      /^next POST in 1[56] min: retry 5 of the curve: 16 min after the last failure$/,
    );
    const later = await summaries(endpointId, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(later).toContain('deliver due: 1 POST, earliest first (failing, streak 4)');
    expect(later).toContain('alert the Account owner: failure streak 5');

    // Deactivated while failing: the backlog is held, and the details say why nothing is sent.
    await bed.patch(tenant, endpointId, { active: false });
    await bed.settled(endpointId, 2, (d) => d.held_since !== null);
    await bed.idle(endpointId);
    text = await details(endpointId);
    expect(text).toContain('- **health**: degraded, inactive: not sending (inactive), deliveries held');
    expect(text).toContain('- **next POST**: none while not sending');
    expect(text).toMatch(/- \*\*deliveries owed\*\*: 0 waiting, 2 held; next hold expiry \S+Z/);
    const held = await summaries(endpointId, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
    expect(held).toContain('hold the backlog: endpoint inactive');
    expect(held).toContain('expire holds older than 14 days');
    // An hour, and up to ten minutes more: idle endpoints reconcile apart.
    expect((await summaries(endpointId, EventType.EVENT_TYPE_TIMER_STARTED)).at(-1)).toMatch(
      /^idle \(not sending: inactive; hold expiry in 14 days\): re-read the endpoint in 1 h( \d+ min)?$/,
    );

    // The receiver recovers and a 2xx test reactivates the endpoint: the backlog goes out, nothing is owed.
    bed.receiver.reply({ status: 200, body: 'ok' });
    await bed.test(tenant, endpointId);
    await bed.env.sleep('2 hours');
    await bed.settled(endpointId, 2, (d) => d.status === 'success');
    await bed.idle(endpointId);
    text = await details(endpointId);
    expect(text).toContain('- **health**: healthy, active: sending, concurrent POSTs');
    expect(text).toContain('- **failure streak**: 0');
    expect(text).toContain('- **next POST**: none: nothing due');
    expect(text).toContain('- **deliveries owed**: 0 waiting');
    expect(text).toMatch(/- \*\*last success\*\*: \S+Z/);
    expect(text).toMatch(/- \*\*last failure\*\*: \S+Z, HTTP 500 \(non_2xx\)/);
    expect((await summaries(endpointId, EventType.EVENT_TYPE_TIMER_STARTED)).at(-1)).toMatch(
      /^idle \(nothing due\): re-read the endpoint in 1 h( \d+ min)?$/,
    );

    await bed.recordHistory(endpointId, 'endpoint-story-fails-recovers-holds');
  }, 180_000);
});
