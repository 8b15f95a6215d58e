/**
 * A direct session's failure handed to the endpoint workflow (time skipping, real activities,
 * Postgres and receiver): the workflow applies the round as its own (streak 1 for the POSTs in
 * flight together, recordHealth, search attributes), no session starts until it has, and from
 * then on it sends one POST at a time on the curve, through its own sessions, until a success.
 * Its own file: the worker's sessions take the endpoints' session leases here.
 */
import { describe, expect, it } from 'vitest';
import { endpointStateQuery } from '../../src/workflows/endpoint-contract.js';
import { createTenant, eventually, testDb } from '../support/harness.js';
import { deliveryTestBed } from '../support/delivery-test-bed.js';
import { waitIdle } from '../support/temporal.js';

const bed = deliveryTestBed({ directSessions: true });

describe('a direct session hands its failure to the workflow (time skipping)', () => {
  it('streak 1 from the failures in flight together, then the curve, one POST at a time, until a success', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('handover'));
    await bed.idle(endpointId);
    bed.receiver.reply({ status: 500, body: 'down' });
    for (let n = 0; n < 3; n++) await bed.publish(tenant, n);
    expect(await bed.direct!.start({ endpointId, accountId: tenant.accountId })).toEqual({ kind: 'started' });

    const failing = await eventually(async () => {
      const row = await bed.endpointRow(endpointId);
      return row.failure_streak > 0 ? row : undefined;
    });
    expect(failing).toMatchObject({ health_status: 'healthy', failure_streak: 1, last_response_code: 500 });
    const handle = bed.handle(endpointId);
    await waitIdle(handle);
    const first = bed.posts('/handover/').length;
    expect(first).toBe(3);
    // Taken in: the mark is gone, and the workflow knows what the session did.
    expect((await testDb().query(`SELECT handover_at FROM endpoints WHERE id = $1`, [endpointId])).rows[0].handover_at).toBeNull();
    expect(await handle.query(endpointStateQuery)).toMatchObject({ failureStreak: 1, delivered: 3, lastFailureCode: 500 });
    // Failing: news goes to the workflow, not to a direct session.
    expect(await bed.direct!.start({ endpointId, accountId: tenant.accountId })).toEqual({ kind: 'workflow' });

    // The curve: one POST a minute after the failure (streak 2), then, answered 2xx, the rest go together.
    await bed.env.sleep('61 seconds');
    await eventually(async () => ((await bed.endpointRow(endpointId)).failure_streak === 2 ? true : undefined));
    expect(bed.posts('/handover/')).toHaveLength(first + 1);
    bed.receiver.reply({ status: 200, body: 'ok' });
    await bed.env.sleep('2 minutes');
    await bed.settled(endpointId, 3, (d) => d.status === 'success');
    expect(await bed.endpointRow(endpointId)).toMatchObject({ health_status: 'healthy', failure_streak: 0 });
    expect(bed.posts('/handover/')).toHaveLength(first + 1 + 3);
    await waitIdle(handle);

    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.flatMap((e) => e.workflowExecutionSignaledEventAttributes?.signalName ?? [])).toContain('roundHandedOver');
    // The patch marker of the hand-over path (replayed by test/workflow/replay.test.ts from the recorded history).
    const patches = events.flatMap((e) =>
      (e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads ?? []).map((p) => JSON.parse(Buffer.from(p.data!).toString()).id),
    );
    expect(patches).toContain('direct-sessions');
    await bed.recordHistory(endpointId, 'endpoint-direct-session-hands-over');
  }, 120_000);
});
