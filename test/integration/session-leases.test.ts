/**
 * The endpoint row's session lease (migration 0019) on real Postgres: one session per endpoint,
 * direct or the workflow's; a workflow session finding a direct one running returns an empty round
 * and sends nothing; a handed-over round holds sessions back until the workflow has taken it in;
 * a lost session's lease lapses and is taken back; a direct session's claims have short leases,
 * renewed while it lives, and work due when a session ends is told to the router.
 */
import { describe, expect, it } from 'vitest';
import { createAttemptRecorder } from '../../src/delivery/attempt-recorder.js';
import { runDeliverySession, type SessionDeps } from '../../src/delivery/delivery-session.js';
import { createSessionLeases, untilLeaseGivenBack } from '../../src/delivery/session-leases.js';
import { merged } from '../../src/core/merged.js';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import { claimWithEndpointsFor, type ClaimRequest } from '../../src/db/deliveries.js';
import type { DueEndpoint } from '../../src/db/due-notifications.js';
import {
  endHandover,
  renewSessionLeases,
  takeBackLostSessions,
  takeDirectSessionLeases,
  takeSessionLease,
} from '../../src/db/session-leases.js';
import type { Db } from '../../src/db/pool.js';
import { eventually, storeDemandEvent, testDb } from '../support/harness.js';
import { beforeEachQuery } from '../support/hooked-pool.js';
import { sessionTestBed } from '../support/session-test-bed.js';

const bed = sessionTestBed('lease');

const LEASE_MS = 1_000;
const take = (id: string, owner: string, kind: 'direct' | 'workflow') => takeSessionLease(testDb(), id, owner, kind, LEASE_MS, 60_000);
const takeMany = (reqs: { endpointId: string; owner: string }[]) => takeDirectSessionLeases(testDb(), reqs, LEASE_MS, 60_000);
/** A healthy endpoint row of the bed's tenant, with no deliveries: what a lease needs. */
async function bareEndpoint(over: { streak?: number } = {}): Promise<string> {
  const { rows } = await testDb().query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status, failure_streak, verified_at)
     VALUES ($1, 'https://public.example/h', '{crm}', '\\x00', 'healthy', $2, now()) RETURNING id`,
    [bed.tenant.accountId, over.streak ?? 0],
  );
  return rows[0]!.id;
}
const leaseOf = async (id: string) =>
  (await testDb().query(`SELECT session_owner, session_until, handover_at FROM endpoints WHERE id = $1`, [id])).rows[0];

function sessionDeps(leaseMs = LEASE_MS, leasesDb: Db = testDb()): SessionDeps & { leases: ReturnType<typeof createSessionLeases> } {
  const leases = createSessionLeases(leasesDb, { leaseMs, renewEveryMs: leaseMs / 5 });
  return {
    db: testDb(),
    secretBox: bed.api.deps.secretBox,
    httpClient: bed.httpClient,
    sessions: createSessionRegistry(),
    recorder: createAttemptRecorder(testDb()),
    concurrency: 4,
    lingerMs: 0,
    maxSessionMs: 30_000,
    claim: async (req: ClaimRequest) => (await claimWithEndpointsFor(testDb(), [req], leaseMs))[0]!,
    leases,
  };
}
const request = (endpointId: string, owner: string) => ({
  endpointId,
  owner,
  clock: Date.now,
  limit: 100,
  signal: new AbortController().signal,
});

/**
 * The pool, its holder's session on endpoint `id` ending just after a take's statement was
 * refused: the lease is given back before the second statement, which asks why.
 */
const endingBeforeWhy = (id: string): Db =>
  beforeEachQuery(async (text) => {
    if (text.includes('held_ms'))
      await testDb().query(`UPDATE endpoints SET session_owner = NULL, session_until = NULL WHERE id = $1`, [id]);
  });

/** A direct session of `owner` on endpoint `id`, its lease taken first as the due router takes it (refused: an error). */
async function runDirect(deps: SessionDeps, id: string, owner: string) {
  const lease = await take(id, owner, 'direct');
  if (!lease.granted) throw new Error(`lease of ${id} not granted to ${owner}`);
  return runDeliverySession(deps, { ...request(id, owner), leased: lease.endpoint });
}

/** Deliveries of endpoint `id` leased to `owner`, or to anyone. */
async function leasedDeliveries(id: string, owner?: string): Promise<number> {
  const { rows } = await testDb().query<{ n: number }>(
    `SELECT count(*)::int AS n FROM deliveries WHERE endpoint_id = $1 AND lease_owner IS NOT NULL AND ($2::text IS NULL OR lease_owner = $2)`,
    [id, owner ?? null],
  );
  return rows[0]!.n;
}

describe('session leases', () => {
  it('one holder at a time: a second direct session is told how long the first holds it; a workflow session gets an empty round and sends nothing', async () => {
    const e = await bed.endpointWithBacklog(3);
    const first = await take(e.id, 'direct/a', 'direct');
    expect(first.granted).toBe(true);
    const second = await take(e.id, 'direct/b', 'direct');
    expect(second.granted).toBe(false);
    expect(second.granted === false && second.heldMs).toBeGreaterThan(0);
    // The workflow's own session (deliverDue) finds the direct one running: no POST, nothing claimed.
    const round = await runDeliverySession(sessionDeps(), request(e.id, 'run/activity'));
    expect(round).toMatchObject({ outcomes: [], posts: 0, more: false });
    expect(e.posts()).toHaveLength(0);
    expect(await leasedDeliveries(e.id)).toBe(0);
    // Its lease lapsed (no renewal): taken back once, then anyone may take it.
    await new Promise((r) => setTimeout(r, LEASE_MS + 50));
    expect((await takeBackLostSessions(testDb())).map((l) => l.endpointId)).toContain(e.id);
    expect((await takeBackLostSessions(testDb())).map((l) => l.endpointId)).not.toContain(e.id);
    expect((await take(e.id, 'direct/b', 'direct')).granted).toBe(true);
  });

  it('a session with a failure ends with a hand-over: no session starts until the workflow has taken it in', async () => {
    const e = await bed.endpointWithBacklog(2);
    bed.receiver.replyOn(e.prefix, { status: 500 });
    try {
      const deps = sessionDeps();
      const round = await runDirect(deps, e.id, 'direct/fails');
      expect(round.outcomes.some((o) => !o.ok)).toBe(true);
      expect(round.healthRecorded).toBe(false);
      expect(await leaseOf(e.id)).toMatchObject({ session_owner: null });
      expect((await leaseOf(e.id)).handover_at).not.toBeNull();
      // Neither kind starts: the direct one goes to the workflow (heldMs null), the workflow's own waits for the round.
      expect(await take(e.id, 'direct/next', 'direct')).toEqual({ granted: false, heldMs: null });
      expect((await take(e.id, 'run/activity', 'workflow')).granted).toBe(false);
      await endHandover(testDb(), e.id);
      expect((await take(e.id, 'run/activity', 'workflow')).granted).toBe(true);
    } finally {
      bed.receiver.replyOn(e.prefix, null);
    }
  });

  it('a direct session leases its claims briefly and renews them while it lives; work due when it ends is told', async () => {
    const e = await bed.endpointWithBacklog(6);
    const DELAY_MS = 700;
    bed.receiver.replyOn(e.prefix, { status: 200, delayMs: DELAY_MS });
    try {
      const deps = sessionDeps();
      const freed: DueEndpoint[] = [];
      deps.leases.onFreed((due) => freed.push(due));
      const running = runDirect(deps, e.id, 'direct/renews');
      // Claimed with a lease of LEASE_MS, not minutes; still held past it, since the session renews it.
      const claimed = await eventually(async () => {
        const { rows } = await testDb().query(
          `SELECT leased_until FROM deliveries WHERE endpoint_id = $1 AND lease_owner = 'direct/renews' AND leased_until IS NOT NULL`,
          [e.id],
        );
        return rows.length > 0 ? rows : undefined;
      });
      for (const r of claimed) expect(r.leased_until.getTime()).toBeLessThan(Date.now() + LEASE_MS + 1_000);
      await new Promise((r) => setTimeout(r, LEASE_MS + 200));
      expect((await leaseOf(e.id)).session_owner).toBe('direct/renews');
      expect((await take(e.id, 'direct/other', 'direct')).granted).toBe(false);
      const round = await running;
      expect(round).toMatchObject({ posts: 6, healthRecorded: true });
      expect(await leaseOf(e.id)).toMatchObject({ session_owner: null, handover_at: null });
      expect(freed).toEqual([]);
      // News committed while a session ends (its pokes refused, its last look done): found when it gives its lease back.
      // This worker knows its own sessions' leases, from the take until the end has returned.
      expect(deps.leases.heldHere(e.id)).toBe(false);
      expect((await deps.leases.take(e.id, 'direct/ending', 'direct')).granted).toBe(true);
      expect(deps.leases.heldHere(e.id)).toBe(true);
      expect((await deps.leases.take(e.id, 'direct/other', 'direct')).granted).toBe(false);
      await storeDemandEvent(bed.tenant.accountId, `${e.prefix}_late`);
      await deps.leases.end(e.id, 'direct/ending', { handover: false, tellIfDue: true });
      expect(deps.leases.heldHere(e.id)).toBe(false);
      expect(freed).toEqual([{ endpointId: e.id, accountId: bed.tenant.accountId }]);
      // And when its last session here gave it back: within the span asked about, not before it.
      expect(deps.leases.heldHereWithin(e.id, 60_000)).toBe(true);
      await new Promise((r) => setTimeout(r, 20));
      expect(deps.leases.heldHereWithin(e.id, 10)).toBe(false);
    } finally {
      bed.receiver.replyOn(e.prefix, null);
    }
  });

  it('a throttled endpoint whose session moves between two workers keeps its pace: no window of its rate_limit holds more POSTs', async () => {
    const RATE = 2;
    const SESSIONS = 6;
    const PER_SESSION = 2;
    const e = await bed.endpointWithBacklog(SESSIONS * PER_SESSION);
    await testDb().query(`UPDATE endpoints SET rate_limit = $2 WHERE id = $1`, [e.id, RATE]);
    // Two workers: each its own leases and its own record of the pace (a worker's, shared by its sessions).
    const workers = [
      { ...sessionDeps(), pacing: new Map<string, number>() },
      { ...sessionDeps(), pacing: new Map<string, number>() },
    ];
    // The endpoint's session moves to the other worker after every PER_SESSION POSTs: the first
    // worker's are direct sessions (the lease taken by its due router), the second's its workflow's.
    for (let n = 0; n < SESSIONS; n++) {
      const worker = workers[n % 2]!;
      const req = { ...request(e.id, `run/${n}`), limit: PER_SESSION };
      let round;
      if (n % 2 === 0) {
        const lease = await worker.leases.take(e.id, req.owner, 'direct');
        if (!lease.granted) throw new Error('lease not granted');
        round = await runDeliverySession(worker, { ...req, leased: lease.endpoint, lastPostAgoMs: lease.lastPostAgoMs });
      } else {
        round = await runDeliverySession(worker, req);
      }
      expect(round.posts).toBe(PER_SESSION);
    }
    const at = e
      .posts()
      .map((p) => p.atMs)
      .sort((a, b) => a - b);
    expect(at).toHaveLength(SESSIONS * PER_SESSION);
    // The most receipts in any window of one second, less 150 ms for the lag of a receipt behind its
    // POST's start (which the throttle spaces), which varies from one POST to the next.
    const most = Math.max(...at.map((start) => at.filter((t) => t >= start && t < start + 850).length));
    expect(most).toBeLessThanOrEqual(RATE);
  });

  it('direct takes asked together: each endpoint to one owner, the rest told who holds it or that its workflow must look, in the order asked', async () => {
    const [a, b, held, failing] = [await bareEndpoint(), await bareEndpoint(), await bareEndpoint(), await bareEndpoint({ streak: 2 })];
    expect((await take(held, 'direct/holder', 'direct')).granted).toBe(true);
    const answers = await takeMany([
      { endpointId: a, owner: 'direct/a1' },
      { endpointId: held, owner: 'direct/h' },
      { endpointId: b, owner: 'direct/b' },
      { endpointId: a, owner: 'direct/a2' },
      { endpointId: failing, owner: 'direct/f' },
    ]);
    const [a1, h, bb, a2, f] = answers;
    // One of a's two owners, never both.
    expect([a1!.granted, a2!.granted].filter(Boolean)).toHaveLength(1);
    const aWinner = a1!.granted ? 'direct/a1' : 'direct/a2';
    const aLoser = a1!.granted ? a2! : a1!;
    expect(aLoser.granted === false && aLoser.heldMs).toBeGreaterThan(0);
    expect((await leaseOf(a)).session_owner).toBe(aWinner);
    expect(bb).toMatchObject({ granted: true, endpoint: { id: b } });
    expect((await leaseOf(b)).session_owner).toBe('direct/b');
    expect(h!.granted === false && h!.heldMs).toBeGreaterThan(0);
    expect((await leaseOf(held)).session_owner).toBe('direct/holder');
    // A streak is its workflow's to handle: no direct session, and no holder to wait for.
    expect(f).toEqual({ granted: false, heldMs: null });
  });

  it('a lease given back between the take and its why (a session ending as news for it comes) is told to ask again, not sent to the workflow; asked again, it is granted', async () => {
    const [one, many] = [await bareEndpoint(), await bareEndpoint()];
    for (const id of [one, many]) expect((await take(id, 'direct/ending', 'direct')).granted).toBe(true);
    const single = await takeSessionLease(endingBeforeWhy(one), one, 'direct/next', 'direct', LEASE_MS, 60_000);
    const [batched] = await takeDirectSessionLeases(endingBeforeWhy(many), [{ endpointId: many, owner: 'direct/next' }], LEASE_MS, 60_000);
    expect(single).toEqual({ granted: false, heldMs: 0 });
    expect(batched).toEqual({ granted: false, heldMs: 0 });
    expect((await take(one, 'direct/next', 'direct')).granted).toBe(true);
    expect((await takeMany([{ endpointId: many, owner: 'direct/next' }]))[0]!.granted).toBe(true);
  });

  it("a workflow's session whose take met a session ending asks again at once and delivers, instead of returning an empty round", async () => {
    const e = await bed.endpointWithBacklog(2);
    expect((await take(e.id, 'direct/ending', 'direct')).granted).toBe(true);
    const round = await runDeliverySession(sessionDeps(LEASE_MS, endingBeforeWhy(e.id)), request(e.id, 'run/activity'));
    expect(round.posts).toBe(2);
    expect(e.posts()).toHaveLength(2);
    expect((await leaseOf(e.id)).session_owner).toBeNull();
  });

  it("a publish's foreign-key locks on endpoints hold up no lease take, renewal or look for lost sessions (takes locking FOR UPDATE deadlocked with a publish)", async () => {
    const [taken, renewed, lost] = [await bareEndpoint(), await bareEndpoint(), await bareEndpoint()];
    // Held for a minute: still its owner's when renewed, however busy the machine.
    expect((await takeSessionLease(testDb(), renewed, 'direct/renewed', 'direct', 60_000, 60_000)).granted).toBe(true);
    await testDb().query(`UPDATE endpoints SET session_owner = 'direct/lost', session_until = now() - interval '1 minute' WHERE id = $1`, [
      lost,
    ]);
    const publish = await testDb().connect();
    const other = await testDb().connect();
    try {
      // What a publish's inserts of deliveries hold until it commits: the foreign-key checks' lock on each endpoint row.
      await publish.query('BEGIN');
      await publish.query(`SELECT 1 FROM endpoints WHERE id = ANY($1::uuid[]) FOR KEY SHARE`, [[taken, renewed, lost]]);
      // A wait for that lock would end in this error, not pass: none is expected at all.
      await other.query(`SET lock_timeout = '5s'`);
      const [answer] = await takeDirectSessionLeases(other, [{ endpointId: taken, owner: 'direct/taker' }], LEASE_MS, 60_000);
      expect(answer!.granted).toBe(true);
      expect(await renewSessionLeases(other, [{ endpointId: renewed, owner: 'direct/renewed' }], [], LEASE_MS)).toEqual({
        kept: new Set(['direct/renewed']),
        lost: new Set(),
      });
      expect((await takeBackLostSessions(other)).map((l) => l.endpointId)).toContain(lost);
    } finally {
      await publish.query('ROLLBACK');
      publish.release();
      other.release();
    }
  });

  it('a renewal tells a lease renewed from one taken by another or taken back, and from one whose row was locked (neither)', async () => {
    const [mine, robbed, takenBack, busy] = [await bareEndpoint(), await bareEndpoint(), await bareEndpoint(), await bareEndpoint()];
    for (const [id, owner] of [
      [mine, 'w/mine'],
      [robbed, 'w/robbed'],
      [takenBack, 'w/taken-back'],
      [busy, 'w/busy'],
    ] as const)
      expect((await takeSessionLease(testDb(), id, owner, 'direct', 60_000, 60_000)).granted).toBe(true);
    await testDb().query(`UPDATE endpoints SET session_owner = 'w/thief' WHERE id = $1`, [robbed]);
    await testDb().query(`UPDATE endpoints SET session_owner = NULL, session_until = NULL WHERE id = $1`, [takenBack]);
    const locker = await testDb().connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM endpoints WHERE id = $1 FOR NO KEY UPDATE`, [busy]);
      const leases = [
        { endpointId: mine, owner: 'w/mine' },
        { endpointId: robbed, owner: 'w/robbed' },
        { endpointId: takenBack, owner: 'w/taken-back' },
        { endpointId: busy, owner: 'w/busy' },
      ];
      expect(await renewSessionLeases(testDb(), leases, [], LEASE_MS)).toEqual({
        kept: new Set(['w/mine']),
        lost: new Set(['w/robbed', 'w/taken-back']),
      });
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
  });

  it('a direct session whose lease another session took (it lapsed meanwhile) starts no more POSTs; what it claimed and did not send is released, the lease left to the taker', async () => {
    const BACKLOG = 40;
    const CONCURRENCY = 4;
    const DELAY_MS = 300;
    const e = await bed.endpointWithBacklog(BACKLOG);
    bed.receiver.replyOn(e.prefix, { status: 200, delayMs: DELAY_MS });
    try {
      const deps = merged(sessionDeps(), { concurrency: CONCURRENCY });
      const running = runDirect(deps, e.id, 'direct/robbed');
      await eventually(async () => e.posts().length > 0);
      await testDb().query(
        `UPDATE endpoints SET session_owner = 'direct/taker', session_until = now() + interval '1 minute' WHERE id = $1`,
        [e.id],
      );
      const atTake = e.posts().length;
      const round = await running;
      // Those in flight at the take, and those started before a renewal found it: within 0.8 of the
      // lease at most (none confirms it after the take), each lane one per DELAY_MS. Usually one round.
      expect(e.posts().length).toBeLessThanOrEqual(atTake + CONCURRENCY * (1 + Math.ceil((0.8 * LEASE_MS) / DELAY_MS)));
      expect(e.posts().length).toBeLessThan(BACKLOG);
      expect(round).toMatchObject({ posts: e.posts().length, more: true });
      expect((await leaseOf(e.id)).session_owner).toBe('direct/taker');
      expect(await leasedDeliveries(e.id, 'direct/robbed')).toBe(0);
    } finally {
      bed.receiver.replyOn(e.prefix, null);
    }
  });

  it("a session whose worker's renewals stall stops starting POSTs before its lease could lapse, and releases the rest", async () => {
    const BACKLOG = 40;
    const CONCURRENCY = 4;
    const DELAY_MS = 200;
    const e = await bed.endpointWithBacklog(BACKLOG);
    bed.receiver.replyOn(e.prefix, { status: 200, delayMs: DELAY_MS });
    // Renewals answer only after three lease lengths: none confirms the lease while the session runs.
    const stalled = beforeEachQuery(async (_, name) => name === 'renew_session_leases' && new Promise((r) => setTimeout(r, 3 * LEASE_MS)));
    try {
      const deps = merged(sessionDeps(LEASE_MS, stalled), { concurrency: CONCURRENCY });
      const round = await runDirect(deps, e.id, 'direct/stalled');
      // POSTs start only within 0.8 of the lease's length from its hold, each lane one per DELAY_MS at most.
      expect(round.posts ?? 0).toBeLessThanOrEqual(CONCURRENCY * ((0.8 * LEASE_MS) / DELAY_MS + 1));
      expect(round.more).toBe(true);
      expect(e.posts()).toHaveLength(round.posts ?? 0);
      expect(await leasedDeliveries(e.id)).toBe(0);
    } finally {
      bed.receiver.replyOn(e.prefix, null);
    }
  });

  it("an activity's retry waits while its earlier attempt, alive, holds and renews the endpoint's lease, and goes on once it is given back or has lapsed", async () => {
    const [live, lapsed] = [await bareEndpoint(), await bareEndpoint()];
    // A lease of 2 s renewed every 200 ms: only a stall of 1.8 s would let it lapse while the retry waits.
    const HELD_MS = 2_000;
    const leases = createSessionLeases(testDb(), { leaseMs: HELD_MS, renewEveryMs: 200 });
    const first = await leases.take(live, 'run/activity', 'workflow');
    expect(first.granted).toBe(true);
    const held = leases.hold({ endpointId: live, owner: 'run/activity' }, false);
    let givenBack = false;
    const waiting = untilLeaseGivenBack(testDb(), live, 'run/activity', new AbortController().signal, 60_000).then(() => givenBack);
    // Held past its length by the renewals: the retry is still waiting.
    await new Promise((r) => setTimeout(r, HELD_MS + 500));
    held.release();
    givenBack = true;
    await leases.end(live, 'run/activity', { handover: false, tellIfDue: false });
    expect(await waiting).toBe(true);
    // A lease its dead worker no longer renews holds the retry only until it lapses.
    expect((await take(lapsed, 'run/activity', 'workflow')).granted).toBe(true);
    await untilLeaseGivenBack(testDb(), lapsed, 'run/activity', new AbortController().signal, 60_000);
    expect((await testDb().query(`SELECT session_until < now() AS lapsed FROM endpoints WHERE id = $1`, [lapsed])).rows[0].lapsed).toBe(
      true,
    );
  });

  it("two workers' batches over the same endpoints in opposite orders neither deadlock nor grant an endpoint twice", async () => {
    const ids = await Promise.all(Array.from({ length: 30 }, () => bareEndpoint()));
    for (let round = 0; round < 5; round++) {
      await testDb().query(`UPDATE endpoints SET session_owner = NULL, session_until = NULL WHERE id = ANY($1)`, [ids]);
      const [x, y] = await Promise.all([
        takeMany(ids.map((id) => ({ endpointId: id, owner: `direct/x/${round}/${id}` }))),
        takeMany([...ids].reverse().map((id) => ({ endpointId: id, owner: `direct/y/${round}/${id}` }))),
      ]);
      const yById = new Map([...ids].reverse().map((id, i) => [id, y[i]!]));
      for (const [i, id] of ids.entries()) {
        const byX = x[i]!.granted;
        const byY = yById.get(id)!.granted;
        expect(byX !== byY).toBe(true);
        expect((await leaseOf(id)).session_owner).toBe(`direct/${byX ? 'x' : 'y'}/${round}/${id}`);
      }
    }
  });
});
