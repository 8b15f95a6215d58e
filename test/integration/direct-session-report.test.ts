/**
 * The operator's view of a healthy endpoint whose deliveries ride direct sessions (no workflow
 * task): the sessions report to the workflow (coalesced, src/delivery/session-reports.ts), and its
 * current details (the Web UI's, the `__temporal_workflow_metadata` query) agree with the endpoint
 * row. On the dev server, since the time-skipping test server keeps no user metadata; real
 * worker, activities, Postgres and receiver.
 */
import { workflowMetadataQuery } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { endpointStateQuery } from '../../src/workflows/endpoint-contract.js';
import { createTenant, eventually, testDb } from '../support/harness.js';
import { deliveryTestBed } from '../support/delivery-test-bed.js';

const bed = deliveryTestBed({ directSessions: true, devServer: true });

const iso = (d: Date) => `${d.toISOString().slice(0, 19)}Z`;

/** The endpoint row's latest success and the count of its successful POSTs (test sends aside). */
async function rowView(endpointId: string) {
  const row = (
    await testDb().query<{ last_success_at: Date; last_response_code: number; health_status: string; failure_streak: number }>(
      `SELECT last_success_at, last_response_code, health_status, failure_streak FROM endpoints WHERE id = $1`,
      [endpointId],
    )
  ).rows[0]!;
  const posts = (
    await testDb().query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
       WHERE d.endpoint_id = $1 AND d.event_type <> 'webhook.test' AND a.error IS NULL`,
      [endpointId],
    )
  ).rows[0]!.n;
  return { ...row, posts };
}

describe('the operator view of direct sessions (dev server)', () => {
  it("a workflow's current details agree with the endpoint row after a direct session", async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('report'));
    await bed.idle(endpointId);
    const handle = bed.handle(endpointId);

    // Two direct sessions one after the other: the first report goes at once, the second is
    // coalesced into the next window and still sent (the last always is).
    let published = 0;
    for (const batch of [3, 2]) {
      for (let n = 0; n < batch; n++) await bed.publish(tenant, published++);
      expect(await bed.direct!.start({ endpointId, accountId: tenant.accountId })).toEqual({ kind: 'started' });
      await bed.settled(endpointId, published, (d) => d.status === 'success');
      // The session ends (its lease given back) before the next one may start.
      await eventually(
        async () =>
          (await testDb().query(`SELECT session_owner FROM endpoints WHERE id = $1`, [endpointId])).rows[0].session_owner === null,
      );
    }

    const row = await rowView(endpointId);
    expect(row).toMatchObject({ health_status: 'healthy', failure_streak: 0, last_response_code: 200, posts: published });
    const state = await eventually(async () => {
      const s = await handle.query(endpointStateQuery);
      return s.directPosts === published ? s : undefined;
    }, 60_000);
    expect(state).toMatchObject({
      health: 'healthy',
      failureStreak: 0,
      lastSuccessAtMs: row.last_success_at.getTime(),
      lastResponseCode: 200,
      directSessions: 2,
      directPosts: row.posts,
    });

    const details = (await handle.query(workflowMetadataQuery)).currentDetails ?? '';
    expect(details).toContain(`- **last success**: ${iso(row.last_success_at)}, HTTP 200`);
    expect(details).toContain(`- **direct sessions**: ${row.posts} POSTs, all 2xx, in 2 sessions`);
    expect(details).toContain('- **failure streak**: 0');
    expect(details.endsWith('\n')).toBe(true);
    // A history with reports, replayed by test/workflow/replay.test.ts.
    await bed.recordHistory(endpointId, 'endpoint-direct-sessions-report');
  }, 120_000);
});
