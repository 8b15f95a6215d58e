import type { AccountId, EndpointId } from '../../src/core/ids.js';
/**
 * The worker's router of due-delivery news, on a database of its own (its sweep looks at every
 * endpoint of the database) and the Temporal dev server, on a task queue nobody polls: a wake
 * signal shows as a `wake` in the endpoint workflow's history.
 */
import crypto from 'node:crypto';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createSessionRegistry } from '../../src/delivery/session-registry.js';
import { createAccount } from '../../src/db/directory.js';
import { dueChannel, notifyDue, type DueEndpoint } from '../../src/db/due-notifications.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { endpointWorkflows } from '../../src/delivery/workflow-client.js';
import type { DirectSessions, DirectStart } from '../../src/delivery/direct-sessions.js';
import { startDueRouter, type DueRouter } from '../../src/delivery/due-router.js';
import { startSessionPreference, type SessionPreference } from '../../src/delivery/session-preference.js';
import { endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';
import { eventually } from '../support/harness.js';

const name = `router_${crypto.randomBytes(4).toString('hex')}`;
const taskQueue = `router-${crypto.randomUUID()}`;
const channel = dueChannel(taskQueue);
let databaseUrl: string;
let db: Db;
let temporalClient: Client;
let accountId: AccountId;
const sessions = createSessionRegistry();
const routers: DueRouter[] = [];

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: inject('databaseUrl') });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  databaseUrl = url.toString();
  await migrate(databaseUrl);
  db = createPool(databaseUrl, 4);
  temporalClient = new Client({ connection: await Connection.connect({ address: inject('devServerAddress') }) });
  accountId = (await createAccount(db, { name: 'router', ownerEmail: 'owner@example.com', plan: 'paid' })).id;
});
// One router at a time listens: each test counts what its own router does.
afterEach(async () => {
  await Promise.all(routers.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await db.end();
  await temporalClient.connection.close();
  const admin = new pg.Client({ connectionString: inject('databaseUrl') });
  await admin.connect();
  await admin.query(`DROP DATABASE "${name}" WITH (FORCE)`);
  await admin.end();
});

function router(
  sweepEveryMs = 0,
  signalEveryMs?: number,
  direct?: DirectSessions,
  heldQuietMs?: number,
  preference?: Pick<SessionPreference, 'listening' | 'onPreferred'>,
): DueRouter {
  const r = startDueRouter({
    databaseUrl,
    db,
    channel,
    sessions,
    workflows: endpointWorkflows(temporalClient, taskQueue),
    sweepEveryMs,
    signalEveryMs,
    direct,
    heldQuietMs,
    preference,
  });
  routers.push(r);
  return r;
}

/** An endpoint row in a given state, with one open delivery due at `dueAgoMs` before now. */
async function endpointWithDelivery(opts: { health?: string; streak?: number; held?: boolean; leased?: boolean; dueAgoMs?: number } = {}) {
  const { rows } = await db.query<{ id: EndpointId }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status, failure_streak)
     VALUES ($1, 'https://receiver.example/hook', '{crm}', '\\x00', $2, $3) RETURNING id`,
    [accountId, opts.health ?? 'healthy', opts.streak ?? 0],
  );
  const endpointId = rows[0]!.id;
  await db.query(
    `INSERT INTO deliveries (account_id, endpoint_id, event_id, event_type, idempotency_key, environment, status, next_attempt_at, held_since, leased_until, lease_owner)
     VALUES ($1, $2, gen_random_uuid(), 'crm.demand.created', $3, 'live', 'pending', now() - make_interval(secs => $4::double precision / 1000),
             CASE WHEN $5 THEN now() END, CASE WHEN $6 THEN now() + interval '1 minute' END, CASE WHEN $6 THEN 'another/session' END)`,
    [accountId, endpointId, `key_${crypto.randomUUID()}`, opts.dueAgoMs ?? 0, opts.held ?? false, opts.leased ?? false],
  );
  return endpointId;
}

/**
 * Direct sessions that answer each ask with `answer(endpointId)` and count the asks. `routedSoFar`:
 * every piece of news notified before has been routed (the router hears one connection's
 * notifications in order and asks about `marker`, answered `started` with no session, at once).
 */
function scriptedDirect(marker: EndpointId, answer: (endpointId: string) => DirectStart) {
  const asked: string[] = [];
  /** How each ask came, beside `asked`: heard on the channel, or found by the worker. */
  const how: (string | undefined)[] = [];
  const freed: ((due: DueEndpoint) => void)[] = [];
  const direct: DirectSessions = {
    start: async (due, came) => {
      asked.push(due.endpointId);
      how.push(came);
      return answer(due.endpointId);
    },
    onFreed: (listener) => freed.push(listener),
    close: async () => {},
  };
  const askedAbout = (id: string) => asked.filter((a) => a === id).length;
  const routedSoFar = async () => {
    const before = askedAbout(marker);
    await notifyDue(db, channel, [{ endpointId: marker, accountId }]);
    await eventually(async () => askedAbout(marker) > before);
  };
  const howAsked = (id: string) => how.filter((_, i) => asked[i] === id);
  return { direct, asked, freed, askedAbout, howAsked, routedSoFar };
}

const { EventType } = temporal.api.enums.v1;
const GRPC_NOT_FOUND = 5;
async function wakeSignals(endpointId: string): Promise<number> {
  return (await wakeSignalTimes(endpointId)).length;
}

/** When Temporal recorded each wake signal of the endpoint's workflow (ms), in order. */
async function wakeSignalTimes(endpointId: string): Promise<number[]> {
  try {
    const { events } = await temporalClient.workflow.getHandle(endpointWorkflowId(endpointId)).fetchHistory();
    return (events ?? [])
      .filter(
        (e) =>
          e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
          e.workflowExecutionSignaledEventAttributes?.signalName === 'wake',
      )
      .map((e) => Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6));
  } catch (err) {
    if (err instanceof WorkflowNotFoundError || (err as { code?: number }).code === GRPC_NOT_FOUND) return [];
    throw err;
  }
}

describe('due-delivery router', () => {
  it('pokes the session running here for its endpoint, and turns news of any other endpoint into a wake signal', async () => {
    const r = router();
    await r.ready;
    const [local, remote] = [await endpointWithDelivery(), await endpointWithDelivery()];
    const session = sessions.open(local);
    const poked = session.wait(10_000);
    await notifyDue(db, channel, [
      { endpointId: local, accountId },
      { endpointId: remote, accountId },
    ]);
    expect(await poked).toBe(true);
    await eventually(async () => (await wakeSignals(remote)) === 1);
    expect(await wakeSignals(local)).toBe(0);

    // A session that is ending refuses pokes: the news goes to the workflow, which starts the next session.
    session.ending();
    await notifyDue(db, channel, [{ endpointId: local, accountId }]);
    await eventually(async () => (await wakeSignals(local)) === 1);
    session.close();
  });

  it('sends each wake signal as soon as a place is free: a slow signal holds back no other endpoint', async () => {
    const [slow, next] = [await endpointWithDelivery(), await endpointWithDelivery()];
    const sent: string[] = [];
    let answerSlow!: () => void;
    const r = startDueRouter({
      databaseUrl,
      db,
      channel,
      sessions,
      workflows: {
        wake: (endpointId) => {
          sent.push(endpointId);
          return endpointId === slow ? new Promise<void>((resolve) => (answerSlow = resolve)) : Promise.resolve();
        },
      },
      sweepEveryMs: 0,
    });
    routers.push(r);
    await r.ready;
    await notifyDue(db, channel, [{ endpointId: slow, accountId }]);
    await eventually(async () => sent.includes(slow));
    // Temporal has not answered for the first one yet.
    await notifyDue(db, channel, [{ endpointId: next, accountId }]);
    await eventually(async () => sent.includes(next));
    answerSlow();
    expect(sent).toEqual([slow, next]);
  });

  it('wakes a workflow whose session has not started yet at most once per interval (250 ms here): the first news at once, the rest at the end', async () => {
    const r = router(0, 250);
    await r.ready;
    const endpointId = await endpointWithDelivery();
    for (let n = 0; n < 10; n++) {
      await notifyDue(db, channel, [{ endpointId, accountId }]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // About 200 ms of news: the first signalled at once, the rest at the interval's end. On a
    // loaded machine the news is heard over a longer span, and each interval it spans may cost
    // one more signal: so the spacing of the signals is what is checked, never one per notification.
    await eventually(async () => (await wakeSignals(endpointId)) >= 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const times = await wakeSignalTimes(endpointId);
    expect(times.length).toBeGreaterThanOrEqual(2);
    expect(times.length).toBeLessThan(10);
    // 250 ms apart as sent; Temporal's recording of each may lag by a varying few tens of ms.
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(150);
  });

  it('once a session has opened for the endpoint, news that finds none is signalled at once, not at the end of the interval', async () => {
    const r = router(0, 60_000);
    await r.ready;
    const endpointId = await endpointWithDelivery();
    await notifyDue(db, channel, [{ endpointId, accountId }]);
    await eventually(async () => (await wakeSignals(endpointId)) === 1);
    // The workflow's session opens here, then ends: the next news goes to the workflow again.
    sessions.open(endpointId).close();
    await notifyDue(db, channel, [{ endpointId, accountId }]);
    await eventually(async () => (await wakeSignals(endpointId)) === 2, 10_000);
  });

  it('hears nothing of another deployment on the same database (another task queue)', async () => {
    const r = router();
    await r.ready;
    const endpointId = await endpointWithDelivery();
    const session = sessions.open(endpointId);
    const poked = session.wait(1_500);
    await notifyDue(db, dueChannel(`other-${taskQueue}`), [{ endpointId, accountId }]);
    expect(await poked).toBe(false);
    session.close();
  });

  it('sweeps at start: wakes endpoints whose due work nobody took, and not those held, leased, failing, or due only now', async () => {
    const overdue = await endpointWithDelivery({ dueAgoMs: 120_000 });
    const held = await endpointWithDelivery({ dueAgoMs: 120_000, held: true });
    const leased = await endpointWithDelivery({ dueAgoMs: 120_000, leased: true });
    const failing = await endpointWithDelivery({ dueAgoMs: 120_000, health: 'degraded', streak: 6 });
    const fresh = await endpointWithDelivery({ dueAgoMs: 0 });
    const r = router(60_000);
    await r.ready;
    await eventually(async () => (await wakeSignals(overdue)) === 1);
    for (const quiet of [held, leased, failing, fresh]) expect(await wakeSignals(quiet)).toBe(0);
  });

  it('listens again after its connection is killed, and sweeps for what it missed meanwhile; tells the preference it stopped hearing, then heard again', async () => {
    const heard: boolean[] = [];
    const r = router(60_000, undefined, undefined, undefined, { listening: (up) => void heard.push(up), onPreferred: () => {} });
    await r.ready;
    expect(heard).toEqual([true]);
    const killed = await db.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
      [name],
    );
    expect(killed.rowCount).toBeGreaterThan(0);
    // Sent while nobody listens: only the sweep after the reconnect finds it.
    const missed = await endpointWithDelivery({ dueAgoMs: 120_000 });
    await notifyDue(db, channel, [{ endpointId: missed, accountId }]);
    await eventually(async () => (await wakeSignals(missed)) >= 1);
    // And news sent after the reconnect is heard again.
    const later = await endpointWithDelivery();
    const session = sessions.open(later);
    await eventually(async () => {
      const poked = session.wait(300);
      await notifyDue(db, channel, [{ endpointId: later, accountId }]);
      return poked;
    });
    session.close();
    expect(heard).toEqual([true, false, true]);
  });

  it('once its worker becomes the preferred one, routes all that is due, overdue or not: news the others left to the one before', async () => {
    const [fresh, marker] = [await endpointWithDelivery({ dueAgoMs: 0 }), await endpointWithDelivery()];
    const { direct, askedAbout, howAsked } = scriptedDirect(marker, () => ({ kind: 'left' }));
    const prefChannel = `pref-${crypto.randomUUID()}`;
    const prefer = () => startSessionPreference({ databaseUrl, channel: prefChannel, retryMs: 50 });
    // One after the other: the first holds the preference.
    const preferences = [prefer()];
    try {
      await preferences[0]!.ready;
      preferences.push(prefer());
      await preferences[1]!.ready;
      expect(preferences.map((p) => p.delayMs())).toEqual([0, 100]);
      const r = router(60_000, 60_000, direct, undefined, preferences[1]);
      await r.ready;
      // Its start's sweep looks for work overdue by its interval (a minute): not this.
      expect(askedAbout(fresh)).toBe(0);
      await preferences[0]!.close();
      await eventually(async () => howAsked(fresh).length > 0);
      expect(howAsked(fresh)).toEqual(['found']);
    } finally {
      await Promise.all(preferences.map((p) => p.close()));
    }
  });

  it('with direct sessions: a started one costs no signal; one for the workflow is signalled as before; a busy endpoint is looked at again when the lease of its holder would lapse', async () => {
    const [started, toWorkflow, busy, freedBusy, busyHere, marker] = [
      await endpointWithDelivery(),
      await endpointWithDelivery(),
      await endpointWithDelivery(),
      await endpointWithDelivery(),
      await endpointWithDelivery(),
      await endpointWithDelivery(),
    ];
    const answers = new Map<string, DirectStart[]>([
      [started, [{ kind: 'started' }]],
      [toWorkflow, [{ kind: 'workflow' }]],
      [busy, [{ kind: 'busy', inMs: 1_000, elsewhere: true }, { kind: 'started' }]],
      [freedBusy, [{ kind: 'busy', inMs: 60_000, elsewhere: true }, { kind: 'started' }]],
      [busyHere, [{ kind: 'busy', inMs: 60_000, elsewhere: false }, { kind: 'started' }]],
      [marker, [{ kind: 'started' }]],
    ]);
    const { direct, asked, freed, askedAbout, routedSoFar } = scriptedDirect(marker, (id) => {
      const list = answers.get(id)!;
      return list.length > 1 ? list.shift()! : list[0]!;
    });
    const r = router(0, 60_000, direct);
    await r.ready;
    await notifyDue(
      db,
      channel,
      [started, toWorkflow, busy, freedBusy, busyHere].map((endpointId) => ({ endpointId, accountId })),
    );
    await eventually(async () => (await wakeSignals(toWorkflow)) === 1);
    // One held by another worker's session: asked once; more news before its holder's lease would
    // lapse (a minute) is its holder's to hear (no statements here)...
    await eventually(async () => asked.includes(freedBusy));
    for (let i = 0; i < 3; i++) await notifyDue(db, channel, [{ endpointId: freedBusy, accountId }]);
    await routedSoFar();
    expect(askedAbout(freedBusy)).toBe(1);
    // ...and one whose holder's lease would lapse in 1 s is asked about again then, not signalled.
    await eventually(async () => asked.filter((id) => id === busy).length === 2);
    // Held by a session of this worker (ending: it may give the lease back with nothing due), news is asked about again at once.
    await notifyDue(db, channel, [{ endpointId: busyHere, accountId }]);
    await eventually(async () => asked.filter((id) => id === busyHere).length === 2, 5_000);
    // More news for the endpoint just signalled goes to its workflow's interval, not to a direct session again.
    await notifyDue(db, channel, [{ endpointId: toWorkflow, accountId }]);
    await routedSoFar();
    expect(asked.filter((id) => id === toWorkflow)).toHaveLength(1);
    expect(await wakeSignals(started)).toBe(0);
    expect(await wakeSignals(busy)).toBe(0);
    // Work found when a session gave its lease back is routed like news, at once, also for an
    // endpoint this worker had found held (by that session, ending) and meant to look at later.
    freed.forEach((tell) => tell({ endpointId: started, accountId }));
    await eventually(async () => asked.filter((id) => id === started).length === 2);
    expect(asked.filter((id) => id === freedBusy)).toHaveLength(1);
    freed.forEach((tell) => tell({ endpointId: freedBusy, accountId }));
    await eventually(async () => asked.filter((id) => id === freedBusy).length === 2, 5_000);
  });
  it('a lease given back here with work due while a start is in flight: a start refused meanwhile asks again at once, not when the lease it saw would lapse', async () => {
    const endpointId = await endpointWithDelivery();
    const asks: ((answer: DirectStart) => void)[] = [];
    const freed: ((due: DueEndpoint) => void)[] = [];
    const direct: DirectSessions = {
      start: () => new Promise<DirectStart>((answer) => asks.push(answer)),
      onFreed: (listener) => freed.push(listener),
      close: async () => {},
    };
    const r = router(0, 60_000, direct);
    await r.ready;
    await notifyDue(db, channel, [{ endpointId, accountId }]);
    await eventually(async () => asks.length === 1);
    // The ending session here gives the lease back with this work due, and the start's answer,
    // read before that, says the lease is that session's for 60 s more.
    freed.forEach((tell) => tell({ endpointId, accountId }));
    asks[0]!({ kind: 'busy', inMs: 60_000, elsewhere: false });
    await eventually(async () => asks.length === 2, 5_000);
    asks[1]!({ kind: 'started' });
    expect(await wakeSignals(endpointId)).toBe(0);
  });

  it('asks about news it hears as heard (which it may leave to the preferred worker), and about work it finds as found; a sweep from 0 ms finds work due only now', async () => {
    const [heard, fresh, freedHere, marker] = [
      await endpointWithDelivery(),
      await endpointWithDelivery({ dueAgoMs: 0 }),
      await endpointWithDelivery(),
      await endpointWithDelivery(),
    ];
    // Left, as a worker not preferred answers news: no signal follows, and nothing is held.
    const { direct, freed, askedAbout, howAsked, routedSoFar } = scriptedDirect(marker, (id) =>
      id === marker ? { kind: 'started' } : { kind: 'left' },
    );
    const r = router(60_000, 60_000, direct);
    await r.ready;
    await notifyDue(db, channel, [{ endpointId: heard, accountId }]);
    await routedSoFar();
    expect(howAsked(heard)).toEqual(['heard']);
    freed.forEach((tell) => tell({ endpointId: freedHere, accountId }));
    await eventually(async () => howAsked(freedHere).length === 1);
    expect(howAsked(freedHere)).toEqual(['found']);
    // Left news is asked about again when it comes again: no hold, no signal.
    await notifyDue(db, channel, [{ endpointId: heard, accountId }]);
    await eventually(async () => howAsked(heard).length === 2);
    expect(howAsked(heard)).toEqual(['heard', 'heard']);
    expect(await wakeSignals(heard)).toBe(0);
    // The start's sweep looked for work overdue by its interval (a minute): not this; one from 0 ms finds it.
    expect(askedAbout(fresh)).toBe(0);
    await r.sweep(0);
    expect(howAsked(fresh)).toEqual(['found']);
  });

  it("asks again about an endpoint held by another worker's session once its news has been quiet for a session's linger, not while news keeps coming", async () => {
    const QUIET_MS = 2_000;
    const [held, marker] = [await endpointWithDelivery(), await endpointWithDelivery()];
    // Always held elsewhere, for a minute: only the quiet rule makes this worker ask again within it.
    const { direct, askedAbout, routedSoFar } = scriptedDirect(marker, (id) =>
      id === marker ? { kind: 'started' } : { kind: 'busy', inMs: 60_000, elsewhere: true },
    );
    const r = router(0, 60_000, direct, QUIET_MS);
    await r.ready;
    await notifyDue(db, channel, [{ endpointId: held, accountId }]);
    await eventually(async () => askedAbout(held) === 1);
    // News back to back: the holder's session is alive and hears it.
    for (let i = 0; i < 3; i++) await notifyDue(db, channel, [{ endpointId: held, accountId }]);
    await routedSoFar();
    expect(askedAbout(held)).toBe(1);
    // Quiet for longer than a session lingers: its holder's session has likely ended, so the next news is asked about.
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS + 200));
    await notifyDue(db, channel, [{ endpointId: held, accountId }]);
    await eventually(async () => askedAbout(held) === 2);
    expect(await wakeSignals(held)).toBe(0);
  });
});
