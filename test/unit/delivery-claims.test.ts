/**
 * The claiming side of a delivery session (src/delivery/delivery-claims.ts), with its claims
 * answered in memory: it claims the next batch while the lanes still have work, not once its
 * queue is empty; not after a claim that took all that was due; and a failed claim ahead reaches
 * the lane that runs dry, never an unhandled rejection; news that comes while it reads the next due
 * time is claimed without waiting for that read; a lingering session claims for a retry that comes
 * due, but not when its timer wakes short of the linger's end; a session whose lease's end routes
 * what is due (a direct session's) makes neither that read nor a last look before it ends idle.
 */
import { describe, expect, it } from 'vitest';
import type { ClaimRequest, ClaimedWithEndpoint } from '../../src/db/deliveries.js';
import { DeliveryClaims } from '../../src/delivery/delivery-claims.js';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import { SessionStopping } from '../../src/delivery/session-stopping.js';

/** A claim that answers `due` deliveries in all (then none), or fails when `failAt` is its call number. */
function claimsOf(due: number, o: { failAt?: number } = {}) {
  const asked: number[] = [];
  let left = due;
  let n = 0;
  const claim = async (r: ClaimRequest): Promise<ClaimedWithEndpoint> => {
    asked.push(r.limit);
    if (++n === o.failAt) throw new Error('claim failed');
    const take = Math.min(r.limit, left);
    left -= take;
    const deliveries = Array.from({ length: take }, () => ({
      id: crypto.randomUUID(),
      event_id: null,
      event_type: 'crm.demand.created',
      idempotency_key: crypto.randomUUID(),
      attempts: 0,
      created_at: new Date(),
      event: null,
    }));
    return { deliveries, endpoint: undefined };
  };
  return { claim, asked };
}

/** A claim that takes the `due.left` deliveries due, then none until a test makes more due. */
function claimsUntilDrained(left: number) {
  const due = { left };
  const claim = async (r: ClaimRequest) =>
    claimsOf(Math.min(r.limit, due.left))
      .claim(r)
      .finally(() => (due.left = 0));
  return { claim, due };
}

function claimsFor(
  claim: (r: ClaimRequest) => Promise<ClaimedWithEndpoint>,
  concurrency: number,
  o: { nextDue?: () => Promise<Date | null>; lingerMs?: number; leaseEndRoutesDue?: boolean; timersEarlyMs?: number } = {},
) {
  const registry = createSessionRegistry();
  const opened = registry.open('endpoint');
  // A busy machine's timer may wake a few milliseconds before Date.now() says the wait is over.
  const early = o.timersEarlyMs ?? 0;
  const news: typeof opened = Object.assign(Object.create(opened) as typeof opened, {
    wait: (ms: number, until?: Promise<unknown>) => opened.wait(Math.max(0, ms - early), until),
  });
  const stopping = new SessionStopping(news);
  const limits = {
    endpointId: 'endpoint',
    owner: 'test',
    clock: Date.now,
    limit: 1_000,
    concurrency,
    lingerMs: o.lingerMs ?? 10,
    maxSessionMs: 60_000,
    claim,
    nextDue: o.nextDue ?? (async () => null),
    leaseEndRoutesDue: o.leaseEndRoutesDue,
  };
  return { claims: new DeliveryClaims(limits, news, stopping), stopping, registry };
}

describe('DeliveryClaims', () => {
  it('claims the next batch once the queue is down to one delivery per lane, while the lanes still have work', async () => {
    const { claim, asked } = claimsOf(100);
    const { claims } = claimsFor(claim, 2);
    await claims.next(); // the first claim: 4 (two per lane); 3 left queued
    expect(asked).toEqual([4]);
    await claims.next(); // 2 left: one per lane, so the next batch is asked for now
    await claims.settled();
    expect(asked).toEqual([4, 2]);
    // Served from the queue, which the claim ahead filled: no lane waited on an empty one.
    for (let i = 0; i < 4; i++) expect(await claims.next()).not.toBeNull();
    await claims.settled();
    expect(claims.claimed).toBe(asked.reduce((a, b) => a + b, 0));
  });

  it('does not claim ahead after a claim that took all that was due', async () => {
    const { claim, asked } = claimsOf(3);
    const { claims } = claimsFor(claim, 2);
    await claims.next();
    await claims.next();
    await claims.next();
    await claims.settled();
    expect(asked).toEqual([4]);
  });

  it('a failed claim ahead that no lane waited on is logged, and the lane that runs dry claims again', async () => {
    const { claim, asked } = claimsOf(100, { failAt: 2 });
    const { claims, stopping } = claimsFor(claim, 2);
    await claims.next();
    await claims.next(); // the claim ahead, which fails
    await claims.settled();
    expect(asked).toEqual([4, 2]);
    // The next lane finds the queue at one delivery and claims ahead again (up to four queued).
    await claims.next();
    await claims.settled();
    expect(asked).toEqual([4, 2, 3]);
    for (let i = 0; i < 4; i++) expect(await claims.next()).not.toBeNull();
    expect(stopping.stopped).toBe(false);
  });

  it('news that comes while the next due time is read is claimed at once, not after that read', async () => {
    const { claim, due } = claimsUntilDrained(1);
    let reads = 0;
    let answer!: (at: Date | null) => void;
    const nextDue = () => {
      reads++;
      return new Promise<Date | null>((resolve) => (answer = resolve));
    };
    const { claims, registry } = claimsFor(claim, 2, { nextDue, lingerMs: 60_000 });
    expect(await claims.next()).not.toBeNull(); // the only one due: that claim took all
    const dry = claims.next(); // nothing due: the session reads when the next comes due, and waits for news
    await new Promise((r) => setTimeout(r, 10));
    expect(reads).toBe(1);
    due.left = 3;
    expect(registry.poke('endpoint')).toBe(true);
    // Claimed with the read still unanswered.
    expect(await dry).not.toBeNull();
    answer(null);
    await claims.settled();
    expect(claims.claimed).toBe(4);
  });

  it('a session that lingers with nothing due reads its next due time and looks once more before it stops idle', async () => {
    const { claim, asked } = claimsOf(1);
    let reads = 0;
    const { claims, stopping } = claimsFor(claim, 2, { nextDue: async () => (reads++, null), lingerMs: 50 });
    expect(await claims.next()).not.toBeNull();
    expect(await claims.next()).toBeNull();
    expect(stopping.reason).toBe('idle');
    expect(reads).toBeGreaterThanOrEqual(1);
    // The first claim, then the last look.
    expect(asked).toHaveLength(2);
  });

  it("claims nothing more when its timers wake short of the linger's end: the first claim and the last look", async () => {
    const { claim, asked } = claimsOf(1);
    const { claims, stopping } = claimsFor(claim, 2, { lingerMs: 50, timersEarlyMs: 5 });
    expect(await claims.next()).not.toBeNull();
    expect(await claims.next()).toBeNull();
    expect(stopping.reason).toBe('idle');
    expect(asked).toHaveLength(2);
  });

  it('claims when a retry comes due while it lingers, before the linger ends', async () => {
    const { claim, due } = claimsUntilDrained(1);
    const dueAt = Date.now() + 30;
    const { claims } = claimsFor(claim, 2, { nextDue: async () => (Date.now() < dueAt ? new Date(dueAt) : null), lingerMs: 60_000 });
    expect(await claims.next()).not.toBeNull();
    due.left = 1; // the retry, due at dueAt
    expect(await claims.next()).not.toBeNull();
    expect(Date.now()).toBeGreaterThanOrEqual(dueAt);
  });

  it("one whose lease's end routes what is due (a direct session's) does neither: one claim, no read", async () => {
    const { claim, asked } = claimsOf(1);
    let reads = 0;
    const { claims, stopping } = claimsFor(claim, 2, { nextDue: async () => (reads++, null), lingerMs: 50, leaseEndRoutesDue: true });
    expect(await claims.next()).not.toBeNull();
    expect(await claims.next()).toBeNull();
    expect(stopping.reason).toBe('idle');
    expect(reads).toBe(0);
    expect(asked).toEqual([4]);
  });

  it('one whose lease routes what is due still claims at once when news comes while it lingers', async () => {
    const { claim, due } = claimsUntilDrained(1);
    const { claims, registry } = claimsFor(claim, 2, { lingerMs: 60_000, leaseEndRoutesDue: true });
    expect(await claims.next()).not.toBeNull();
    const dry = claims.next();
    await new Promise((r) => setTimeout(r, 10));
    due.left = 2;
    expect(registry.poke('endpoint')).toBe(true);
    expect(await dry).not.toBeNull();
    await claims.settled();
    expect(claims.claimed).toBe(3);
  });

  it('a lane that runs dry while a claim ahead is under way waits for it, and meets its failure: the session stops', async () => {
    let fail!: (err: Error) => void;
    const { claim: first } = claimsOf(4);
    let calls = 0;
    const claim = (r: ClaimRequest) => (++calls === 1 ? first(r) : new Promise<ClaimedWithEndpoint>((_, reject) => (fail = reject)));
    const { claims, stopping } = claimsFor(claim, 2);
    await claims.next();
    await claims.next(); // the claim ahead starts, and hangs
    await claims.next();
    await claims.next(); // the queue is empty now
    const dry = claims.next();
    fail(new Error('claim failed'));
    await expect(dry).rejects.toThrow('claim failed');
    expect(stopping.stopped).toBe(true);
    expect(await claims.next()).toBeNull();
  });
});
