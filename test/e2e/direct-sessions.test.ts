/**
 * Direct sessions on real components (the dev server, production workers in processes of their
 * own): news for a healthy endpoint runs its session in the worker, with no workflow task; two
 * workers never run two sessions of one endpoint; a failure goes to the workflow, which then sends
 * on the curve; a worker killed mid-session loses nothing and another takes over within seconds.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventually, testDb } from '../support/harness.js';
import type { ReceivedRequest } from '../support/https-receiver.js';
import { expectOnlyUnrecordedResent } from '../support/resends.js';
import { demandEvent } from '../support/kit.js';
import { waitIdle } from '../support/temporal.js';
import { hmac, workerProcessBed } from '../support/worker-process-bed.js';
import { endpointStateQuery, endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';

const bed = workerProcessBed('direct', 2);

const handle = (id: string) => bed.temporal.workflow.getHandle(endpointWorkflowId(id));
const history = async (id: string) => (await handle(id).fetchHistory()).events ?? [];

/** A verified endpoint on the local receiver, through the API, its workflow idle. */
async function endpoint(prefix: string, secret: string): Promise<string> {
  const id = await bed.verifiedEndpoint(prefix, secret);
  await waitIdle(handle(id));
  return id;
}

async function publish(tag: string, n: number): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      bed.api.request('POST', '/api/v1/events', { key: bed.tenant.key, body: demandEvent(`${tag}_${i}`) }),
    ),
  );
  expect(answers.map((a) => a.status)).toEqual(Array(n).fill(201));
}

const statuses = async (endpointId: string) =>
  (
    await testDb().query<{ idempotency_key: string; status: string }>(
      `SELECT idempotency_key, status FROM deliveries WHERE endpoint_id = $1 AND event_type <> 'webhook.test'`,
      [endpointId],
    )
  ).rows;
const allSucceeded = (endpointId: string, count: number, timeoutMs = 60_000) =>
  eventually(async () => {
    const rows = await statuses(endpointId);
    return rows.length === count && rows.every((d) => d.status === 'success') ? rows : undefined;
  }, timeoutMs);

/** The most requests under `prefix` in flight at once, for a receiver answering each after `delayMs`. */
function mostInFlight(received: ReceivedRequest[], delayMs: number): number {
  const at = received.map((r) => r.atMs).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[j]! <= at[i]! - delayMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('direct sessions', () => {
  it('bursts to a healthy endpoint ride direct sessions: its workflow hears only their coalesced reports (no activity, no command)', async () => {
    const prefix = `/quiet/${crypto.randomUUID()}`;
    const secret = 'whsec_direct_quiet_secret_01';
    const id = await endpoint(prefix, secret);
    const before = (await history(id)).length;
    for (let b = 0; b < 5; b++) {
      await publish(`quiet_${id}_${b}`, 20);
      await new Promise((r) => setTimeout(r, 200));
    }
    await allSucceeded(id, 100);
    const all = bed.posts(prefix);
    expect(new Set(all.map((p) => p.headers['x-idempotency-key'])).size).toBe(100);
    for (const p of all) expect(p.headers['x-webhook-signature']).toBe(hmac(secret, p.body));
    // The session recorded its successes on the endpoint itself.
    const { rows } = await testDb().query(`SELECT last_success_at, last_response_code, session_owner FROM endpoints WHERE id = $1`, [id]);
    expect(rows[0]).toMatchObject({ last_response_code: 200 });
    expect(rows[0].last_success_at).not.toBeNull();
    // Only reports (src/delivery/session-reports.ts): a signal and a workflow task each, no command.
    // Each worker's last report goes at most the reports' window after its last session (2 s in tests).
    await eventually(async () => (await handle(id).query(endpointStateQuery)).directPosts === 100, 60_000);
    const after = (await history(id)).slice(before);
    const signals = after.flatMap((e) => e.workflowExecutionSignaledEventAttributes?.signalName ?? []);
    expect(new Set(signals)).toEqual(new Set(['sessionsReported']));
    expect(after.filter((e) => e.activityTaskScheduledEventAttributes || e.timerStartedEventAttributes)).toEqual([]);
  }, 120_000);

  it('two workers hear the same news: one session per endpoint at a time, never more POSTs in flight than one session makes', async () => {
    const prefix = `/one-session/${crypto.randomUUID()}`;
    const id = await endpoint(prefix, 'whsec_direct_one_session_01');
    const DELAY_MS = 300;
    bed.receiver.replyOn(prefix, { status: 200, delayMs: DELAY_MS });
    try {
      for (let b = 0; b < 6; b++) {
        await publish(`one_${id}_${b}`, 25);
        await new Promise((r) => setTimeout(r, 150));
      }
      await allSucceeded(id, 150);
    } finally {
      bed.receiver.replyOn(prefix, null);
    }
    const all = bed.posts(prefix);
    expect(new Set(all.map((p) => p.headers['x-idempotency-key'])).size).toBe(150);
    // A session has 16 lanes: two sessions side by side would reach up to 32.
    const most = mostInFlight(all, DELAY_MS);
    expect(most).toBeGreaterThanOrEqual(8);
    expect(most).toBeLessThanOrEqual(16);
  }, 120_000);

  it('a failure in a direct session goes to the workflow: one failure of the streak, then nothing before the curve says', async () => {
    const prefix = `/fails/${crypto.randomUUID()}`;
    const id = await endpoint(prefix, 'whsec_direct_fails_secret_1');
    bed.receiver.replyOn(prefix, { status: 500, body: 'down', delayMs: 50 });
    try {
      await publish(`fails_${id}_a`, 30);
      const row = await eventually(async () => {
        const r = (
          await testDb().query(`SELECT failure_streak, health_status, handover_at, last_response_code FROM endpoints WHERE id = $1`, [id])
        ).rows[0];
        // Once the workflow has taken in the round the session handed over (handover_at cleared).
        return r.failure_streak > 0 && r.handover_at === null ? r : undefined;
      }, 30_000);
      // The POSTs in flight at the first failure count once (DECISIONS "Streak under concurrent sends").
      expect(row).toMatchObject({ failure_streak: 1, last_response_code: 500, handover_at: null });
      const events = await history(id);
      const signals = events.flatMap((e) => e.workflowExecutionSignaledEventAttributes?.signalName ?? []);
      expect(signals).toContain('roundHandedOver');
      const activities = events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
      expect(activities).toContain('recordHealth');
      const burst = bed.posts(prefix).length;
      expect(burst).toBeGreaterThanOrEqual(1);
      expect(burst).toBeLessThanOrEqual(16);
      // More news while failing: no direct session starts, and the curve's first step is a minute.
      await publish(`fails_${id}_b`, 10);
      await new Promise((r) => setTimeout(r, 3_000));
      expect(bed.posts(prefix)).toHaveLength(burst);
      const failed = (await statuses(id)).filter((d) => d.status === 'failed');
      expect(failed).toHaveLength(burst);
    } finally {
      bed.receiver.replyOn(prefix, null);
    }
  }, 120_000);

  it('a worker killed mid-session: the other takes its endpoint over once its lease lapses; only POSTs in flight or unrecorded are sent twice', async () => {
    const prefix = `/killed/${crypto.randomUUID()}`;
    const id = await endpoint(prefix, 'whsec_direct_killed_secre_1');
    const COUNT = 200;
    bed.receiver.replyOn(prefix, { status: 200, delayMs: 200 });
    try {
      await publish(`killed_${id}`, COUNT);
      await eventually(async () => bed.posts(prefix).length >= 30);
      const { rows } = await testDb().query<{ session_owner: string | null }>(`SELECT session_owner FROM endpoints WHERE id = $1`, [id]);
      const pid = Number(rows[0]!.session_owner?.split('/')[1]);
      const victim = bed.workers.find((w) => w.child.pid === pid);
      expect(victim).toBeDefined();
      await victim!.kill();
      const killedAt = Date.now();
      bed.workers.splice(bed.workers.indexOf(victim!), 1);
      // The dead session's lease, as it was last renewed: no other session may start before it lapses.
      const lease = await testDb().query<{ owner: string; until_ms: number }>(
        `SELECT session_owner AS owner, (extract(epoch FROM session_until) * 1000)::float8 AS until_ms FROM endpoints WHERE id = $1`,
        [id],
      );
      expect(lease.rows[0]!.owner).toBe(rows[0]!.session_owner);
      const recordedBeforeKill = new Set((await statuses(id)).filter((d) => d.status === 'success').map((d) => d.idempotency_key));
      const sentBeforeKill = new Set(bed.posts(prefix).map((p) => String(p.headers['x-idempotency-key'])));
      expect(recordedBeforeKill.size).toBeLessThan(COUNT);

      // The lease (10 s) lapses and the other worker's look for lost sessions (every 5 s) takes it:
      // its POSTs come after the lapse, and the endpoint's lease is then the other worker's.
      const resumed = await eventually(async () => bed.posts(prefix).find((p) => p.atMs > killedAt + 250), 60_000);
      console.log(`deliveries resumed ${resumed.atMs - killedAt} ms after the kill`);
      expect(resumed.atMs).toBeGreaterThanOrEqual(lease.rows[0]!.until_ms);
      const survivor = bed.workers[0]!.child.pid;
      await eventually(async () => {
        const now = await testDb().query<{ session_owner: string | null }>(`SELECT session_owner FROM endpoints WHERE id = $1`, [id]);
        return now.rows[0]!.session_owner?.split('/')[1] === String(survivor);
      });
      await allSucceeded(id, COUNT, 90_000);
      expectOnlyUnrecordedResent(bed.posts(prefix), { expected: COUNT, sentBefore: sentBeforeKill, recordedBefore: recordedBeforeKill });
    } finally {
      bed.receiver.replyOn(prefix, null);
    }
  }, 180_000);
});
