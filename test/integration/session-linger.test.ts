/**
 * A delivery session lingering with nothing due: it waits for news (a poke), not on a clock, and
 * claims once more only for its last look before it ends idle; a poke while it lingers is taken.
 * In a worker that runs direct sessions, a workflow's session of a healthy endpoint does not
 * linger: the endpoint's news is for a direct session on the deployment's preferred worker.
 */
import { describe, expect, it } from 'vitest';
import { createAttemptRecorder } from '../../src/delivery/attempt-recorder.js';
import { runDeliverySession, type SessionDeps } from '../../src/delivery/delivery-session.js';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import { createSessionLeases } from '../../src/delivery/session-leases.js';
import { LEASE_MS } from '../../src/core/runtime-limits.js';
import { claimWithEndpointsFor, type ClaimRequest } from '../../src/db/deliveries.js';
import { storeDemandEvent, testDb } from '../support/harness.js';
import { sessionTestBed } from '../support/session-test-bed.js';

const bed = sessionTestBed('linger');

/** A workflow's session lingering `lingerMs`, with its claims counted; `direct`: in a worker that runs direct sessions. */
function lingeringSession(endpointId: string, lingerMs: number, direct = false) {
  const claims: number[] = [];
  const sessions = createSessionRegistry();
  const deps: SessionDeps = {
    db: testDb(),
    secretBox: bed.api.deps.secretBox,
    httpClient: bed.httpClient,
    sessions,
    recorder: createAttemptRecorder(testDb()),
    concurrency: 4,
    lingerMs,
    maxSessionMs: 30_000,
    claim: async (req: ClaimRequest) => {
      claims.push(Date.now());
      return (await claimWithEndpointsFor(testDb(), [req], LEASE_MS))[0]!;
    },
    leases: direct ? createSessionLeases(testDb(), { leaseMs: LEASE_MS, renewEveryMs: LEASE_MS / 5 }) : undefined,
    directSessions: direct,
  };
  const startedAt = Date.now();
  const req = { endpointId, owner: `linger/${crypto.randomUUID()}`, clock: Date.now, limit: 100, signal: new AbortController().signal };
  return { running: runDeliverySession(deps, req), claims, sessions, startedAt };
}

describe('a lingering delivery session', () => {
  it('claims once for its work and once for its last look, however long it lingers', async () => {
    const e = await bed.endpointWithBacklog(3);
    const s = lingeringSession(e.id, 2_500);
    const round = await s.running;
    expect(round).toMatchObject({ posts: 3, more: false, healthRecorded: true });
    expect(e.posts()).toHaveLength(3);
    expect(Date.now() - s.startedAt).toBeGreaterThanOrEqual(2_500);
    // (It looked once a second: five claims here.)
    expect(s.claims).toHaveLength(2);
  });

  it('takes work it is poked about while it lingers, and ends idle after lingering again', async () => {
    const e = await bed.endpointWithBacklog(1);
    const s = lingeringSession(e.id, 1_500);
    while (e.posts().length < 1) await new Promise((r) => setTimeout(r, 20));
    await storeDemandEvent(bed.tenant.accountId, `${e.prefix}_late`);
    expect(s.sessions.poke(e.id)).toBe(true);
    const round = await s.running;
    expect(round).toMatchObject({ posts: 2, more: false });
    expect(e.posts()).toHaveLength(2);
  });

  it('of a healthy endpoint beside direct sessions, sends what is due and ends without lingering, its lease given back', async () => {
    const e = await bed.endpointWithBacklog(3);
    const s = lingeringSession(e.id, 30_000, true);
    const round = await s.running;
    expect(round).toMatchObject({ posts: 3, more: false });
    expect(e.posts()).toHaveLength(3);
    // Lingering, it would have held the lease (and taken the endpoint's news) for 30 s.
    expect(Date.now() - s.startedAt).toBeLessThan(30_000);
    const lease = await testDb().query(`SELECT session_owner FROM endpoints WHERE id = $1`, [e.id]);
    expect(lease.rows[0].session_owner).toBeNull();
  });

  it('of an endpoint no direct session may serve (a failure streak), lingers beside direct sessions too', async () => {
    const e = await bed.endpointWithBacklog(1);
    await testDb().query(`UPDATE endpoints SET failure_streak = 1 WHERE id = $1`, [e.id]);
    const s = lingeringSession(e.id, 1_500, true);
    const round = await s.running;
    expect(round).toMatchObject({ posts: 1 });
    expect(Date.now() - s.startedAt).toBeGreaterThanOrEqual(1_500);
  });
});
