/**
 * A worker that is not the deployment's preferred one (src/delivery/session-preference.ts) asks
 * for a new direct session's lease only after its delay, so the preferred worker's ask, made
 * meanwhile, gets the session; with no delay it asks at once. While the preferred worker takes
 * news, it does not ask for what it heard at all, unless its own session of the endpoint holds the
 * lease or gave it back moments ago. Real worker, leases and Postgres;
 * the other worker's ask is its lease statement.
 */
import { describe, expect, it } from 'vitest';
import { HANDOVER_TIMEOUT_MS, SESSION_LEASE_MS } from '../../src/core/runtime-limits.js';
import type { AccountId, EndpointId } from '../../src/core/ids.js';
import { endSessionLease, takeDirectSessionLeases } from '../../src/db/session-leases.js';
import { createTenant, eventually, testDb } from '../support/harness.js';
import { deliveryTestBed } from '../support/delivery-test-bed.js';

let delay = 0;
let leave = false;
const bed = deliveryTestBed({ directSessions: true, devServer: true, preference: { delayMs: () => delay, leavesNews: () => leave } });

const otherWorker = (endpointId: string) =>
  takeDirectSessionLeases(testDb(), [{ endpointId, owner: 'direct/other-worker' }], SESSION_LEASE_MS, HANDOVER_TIMEOUT_MS);
const owner = async (endpointId: string) =>
  (await testDb().query<{ session_owner: string | null }>(`SELECT session_owner FROM endpoints WHERE id = $1`, [endpointId])).rows[0]!
    .session_owner;

describe('direct sessions of a worker that is not preferred', () => {
  it('ask after their delay: the preferred worker asking meanwhile gets the session', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('not-preferred'));
    await bed.idle(endpointId);
    const due = { endpointId: endpointId as EndpointId, accountId: tenant.accountId as AccountId };

    // The other worker asks 300 ms after this one heard the news: long after an ask made at once.
    delay = 2_000;
    const starting = bed.direct!.start(due);
    await new Promise((r) => setTimeout(r, 300));
    expect((await otherWorker(endpointId))[0]).toMatchObject({ granted: true });
    expect(await starting).toMatchObject({ kind: 'busy', elsewhere: true });
    await endSessionLease(testDb(), endpointId, 'direct/other-worker', false);

    // Preferred (no delay): it asks at once, and the other worker's ask finds the session taken.
    delay = 0;
    expect(await bed.direct!.start(due)).toEqual({ kind: 'started' });
    expect(await owner(endpointId)).toMatch(/^direct\//);
    expect((await otherWorker(endpointId))[0]).toMatchObject({ granted: false });
    await eventually(async () => (await owner(endpointId)) === null, 30_000);
  }, 60_000);

  it('leave news they hear to the preferred worker, asking nothing; work they found themselves they ask for', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('leaves-news'));
    await bed.idle(endpointId);
    const due = { endpointId: endpointId as EndpointId, accountId: tenant.accountId as AccountId };
    // Its first session (the verification's) ran here: news heard within a second of its end is asked for here.
    await new Promise((r) => setTimeout(r, 1_100));
    leave = true;
    try {
      expect(await bed.direct!.start(due, 'heard')).toEqual({ kind: 'left' });
      // Not asked: the lease is free, and the preferred worker's ask gets it.
      expect(await owner(endpointId)).toBeNull();
      expect((await otherWorker(endpointId))[0]).toMatchObject({ granted: true });
      await endSessionLease(testDb(), endpointId, 'direct/other-worker', false);
      // Found here (a sweep, a lease given back or lost): asked for, and started.
      expect(await bed.direct!.start(due, 'found')).toEqual({ kind: 'started' });
      expect(await owner(endpointId)).toMatch(/^direct\//);
    } finally {
      leave = false;
    }
    await eventually(async () => (await owner(endpointId)) === null, 30_000);
  }, 60_000);

  it('do not leave the news of an endpoint whose session here holds its lease or gave it back moments ago: they ask', async () => {
    const tenant = await createTenant();
    const endpointId = await bed.verifiedEndpoint(tenant, bed.uniquePath('held-here'));
    await bed.idle(endpointId);
    const due = { endpointId: endpointId as EndpointId, accountId: tenant.accountId as AccountId };
    leave = true;
    try {
      expect(await bed.direct!.start(due, 'found')).toEqual({ kind: 'started' });
      // Its session holds the lease (or has just given it back): news heard for it is asked about here,
      // since the preferred worker, refused while it ran, holds it as this worker's to hear.
      expect((await bed.direct!.start(due, 'heard')).kind).not.toBe('left');
    } finally {
      leave = false;
    }
    await eventually(async () => (await owner(endpointId)) === null, 30_000);
  }, 60_000);
});
