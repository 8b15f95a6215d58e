/**
 * The activity contexts (Temporal's activity Context and its worker connection's call context)
 * are off while no activity runs, so the process pays no async hooks for them between activities,
 * and on again, as before, for as long as any activity runs.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { asyncLocalStorage as activityContext, type Context } from '@temporalio/activity';
import type { ActivityExecuteInput } from '@temporalio/worker';
import { activityContextsOffWhenIdle } from '../../src/worker/activity-contexts.js';

const connection = { callContextStorage: new AsyncLocalStorage<{ deadline?: number }>() };
const factory = activityContextsOffWhenIdle(connection);

/** An activity run as the worker runs one: inside both contexts, through the interceptor. */
function runActivity(context: object, body: () => Promise<void>): Promise<unknown> {
  const inbound = factory({} as never).inbound!;
  return activityContext.run(context as Context, () =>
    connection.callContextStorage.run({ deadline: 1 }, () => inbound.execute!({} as ActivityExecuteInput, () => body())),
  );
}

/** A read of both contexts that runs later, in a callback created now (inside whatever context is current). */
function readLater(): { read: () => void; seen: Promise<[unknown, unknown]> } {
  let read!: () => void;
  const seen = new Promise<void>((r) => (read = r)).then(
    () => [activityContext.getStore(), connection.callContextStorage.getStore()] as [unknown, unknown],
  );
  return { read, seen };
}

describe('activity contexts while no activity runs', () => {
  it('are read inside an activity, and off once none runs: a callback it left reads nothing', async () => {
    const context = { name: 'a' };
    let inside: unknown;
    let later!: ReturnType<typeof readLater>;
    await runActivity(context, async () => {
      inside = activityContext.getStore();
      later = readLater();
    });
    await nextTurn();
    later.read();
    expect(inside).toBe(context);
    // On, the callback would still see the activity's context (and deadline) it was created in.
    expect(await later.seen).toEqual([undefined, undefined]);
  });

  it('stay on while another activity runs, and go off when the last one ends', async () => {
    const long = { name: 'long' };
    let finishLong!: () => void;
    let midway!: ReturnType<typeof readLater>;
    const running = runActivity(long, async () => {
      midway = readLater();
      await new Promise<void>((r) => (finishLong = r));
    });
    await runActivity({ name: 'short' }, async () => {});
    await nextTurn();
    midway.read();
    expect(await midway.seen).toEqual([long, { deadline: 1 }]);
    let after!: ReturnType<typeof readLater>;
    await runActivity({ name: 'third' }, async () => {
      after = readLater();
      finishLong();
    });
    await running;
    await nextTurn();
    after.read();
    expect(await after.seen).toEqual([undefined, undefined]);
  });

  it('are on again for the next activity', async () => {
    await runActivity({ name: 'first' }, async () => {});
    await nextTurn();
    const next = { name: 'next' };
    let inside: unknown;
    await runActivity(next, async () => {
      await nextTurn();
      inside = activityContext.getStore();
    });
    expect(inside).toBe(next);
  });
});
