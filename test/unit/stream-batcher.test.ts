/** The group-commit queue on its own: which calls share a batch, and what a failed batch does to its callers. */
import { describe, expect, it } from 'vitest';
import { StreamBatcher, type Turn } from '../../src/events/stream-batcher.js';

/** A batch runner that records its batches and answers each item after `release()` (or at once). */
function recorder(opts: { fail?: (items: number[]) => Error | undefined; hold?: boolean } = {}) {
  const batches: number[][] = [];
  const waiting: (() => void)[] = [];
  const run = async (items: number[]) => {
    batches.push(items);
    if (opts.hold) await new Promise<void>((r) => waiting.push(r));
    const err = opts.fail?.(items);
    if (err) throw err;
    return items.map((i) => i * 10);
  };
  return { batches, run, release: () => waiting.splice(0).forEach((r) => r()) };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('StreamBatcher', () => {
  it('runs a lone call at once, and calls made in one tick as one batch', async () => {
    const r = recorder();
    const b = new StreamBatcher(r.run, { maxBatch: 100 });
    expect(await b.submit('s', 1)).toBe(10);
    expect(await Promise.all([2, 3, 4].map((i) => b.submit('s', i)))).toEqual([20, 30, 40]);
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
  });

  it('queues calls while a batch of the key runs, and takes them together next, capped at maxBatch', async () => {
    const r = recorder({ hold: true });
    const b = new StreamBatcher(r.run, { maxBatch: 3 });
    const first = b.submit('s', 1);
    await tick();
    const later = [2, 3, 4, 5].map((i) => b.submit('s', i));
    const other = b.submit('t', 9);
    await tick();
    // Key t does not wait for key s.
    expect(r.batches).toEqual([[1], [9]]);
    r.release();
    await first;
    await tick();
    expect(r.batches).toEqual([[1], [9], [2, 3, 4]]);
    r.release();
    await tick();
    r.release();
    expect(await Promise.all(later)).toEqual([20, 30, 40, 50]);
    expect(await other).toBe(90);
    expect(r.batches).toEqual([[1], [9], [2, 3, 4], [5]]);
  });

  it('retries a failed batch one item at a time: only the bad item fails its caller', async () => {
    const r = recorder({ fail: (items) => (items.includes(3) ? new Error('bad 3') : undefined) });
    const b = new StreamBatcher(r.run, { maxBatch: 100 });
    const results = await Promise.allSettled([1, 2, 3, 4].map((i) => b.submit('s', i)));
    expect(results).toEqual([
      { status: 'fulfilled', value: 10 },
      { status: 'fulfilled', value: 20 },
      { status: 'rejected', reason: new Error('bad 3') },
      { status: 'fulfilled', value: 40 },
    ]);
    expect(r.batches).toEqual([[1, 2, 3, 4], [1], [2], [3], [4]]);
  });

  it('gives the rest of a failed batch the error that would fail any item, without trying each', async () => {
    const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const r = recorder({ fail: () => down });
    const b = new StreamBatcher(r.run, { maxBatch: 100, failsAll: (err) => (err as { code?: string }).code === 'ECONNREFUSED' });
    const results = await Promise.allSettled([1, 2, 3].map((i) => b.submit('s', i)));
    expect(results.map((x) => x.status === 'rejected' && x.reason)).toEqual([down, down, down]);
    expect(r.batches).toEqual([[1, 2, 3], [1]]);
    // The key is idle again: the next call runs.
    r.batches.length = 0;
    await expect(b.submit('s', 4)).rejects.toBe(down);
    expect(r.batches).toEqual([[4]]);
  });

  it('with two in flight, enough calls arriving while a batch runs start one beside it; fewer wait for it to end', async () => {
    const r = recorder({ hold: true });
    const b = new StreamBatcher(r.run, { maxBatch: 100, maxInFlight: 2, minShare: 3 });
    const first = b.submit('s', 1);
    await tick();
    const few = [2, 3].map((i) => b.submit('s', i));
    await tick();
    expect(r.batches).toEqual([[1]]);
    const more = [4].map((i) => b.submit('s', i));
    await tick();
    // Three waiting: a batch of its own, beside the running one.
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
    const after = [5, 6].map((i) => b.submit('s', i));
    await tick();
    // Both places taken: these wait.
    expect(r.batches).toEqual([[1], [2, 3, 4]]);
    r.release();
    expect(await Promise.all([first, ...few, ...more])).toEqual([10, 20, 30, 40]);
    await tick();
    expect(r.batches).toEqual([[1], [2, 3, 4], [5, 6]]);
    r.release();
    expect(await Promise.all(after)).toEqual([50, 60]);
  });

  it('shares a queue long enough for every free place among them', async () => {
    const r = recorder({ hold: true });
    const b = new StreamBatcher(r.run, { maxBatch: 100, maxInFlight: 2, minShare: 3 });
    const calls = [1, 2, 3, 4, 5, 6, 7].map((i) => b.submit('s', i));
    await tick();
    expect(r.batches).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7],
    ]);
    r.release();
    expect(await Promise.all(calls)).toEqual([10, 20, 30, 40, 50, 60, 70]);
    // Five calls would not fill two shares of three: one batch.
    r.batches.length = 0;
    const five = [1, 2, 3, 4, 5].map((i) => b.submit('t', i));
    await tick();
    expect(r.batches).toEqual([[1, 2, 3, 4, 5]]);
    r.release();
    await Promise.all(five);
  });

  it("gives each batch its turn once the one before it is placed, or has ended, whatever the batches' own pace", async () => {
    const log: string[] = [];
    const gates = new Map<number, () => void>();
    const opened = (first: number) => new Promise<void>((r) => gates.set(first, r));
    const run = async (items: number[], turn: Turn) => {
      const first = items[0]!;
      const gate = opened(first);
      log.push(`start ${first} (ready: ${turn.isReady()})`);
      await turn.ready;
      log.push(`turn ${first}`);
      await gate;
      turn.placed();
      log.push(`placed ${first}`);
      if (first === 4) throw new Error('batch 4 fails after its place');
      return items;
    };
    const b = new StreamBatcher(run, { maxBatch: 100, maxInFlight: 2, minShare: 1 });
    const one = b.submit('s', 1);
    await tick();
    const two = b.submit('s', 2);
    await tick();
    expect(log).toEqual(['start 1 (ready: true)', 'turn 1', 'start 2 (ready: false)']);
    gates.get(1)!();
    await tick();
    expect(log.slice(3)).toEqual(['placed 1', 'turn 2']);
    expect(await one).toBe(1);
    const four = b.submit('s', 4);
    await tick();
    expect(log.slice(5)).toEqual(['start 4 (ready: false)']);
    gates.get(2)!();
    expect(await two).toBe(2);
    await tick();
    gates.get(4)!();
    await expect(four).rejects.toThrow('batch 4 fails');
    // The lane goes on after a failed batch.
    const five = b.submit('s', 5);
    await tick();
    gates.get(5)!();
    expect(await five).toBe(5);
    expect(log.filter((l) => l.startsWith('turn'))).toEqual(['turn 1', 'turn 2', 'turn 4', 'turn 5']);
  });
});
