import { describe, expect, it } from 'vitest';
import { createStatementBatcher } from '../../src/runtime/statement-batcher.js';

/** A batcher whose statements wait until released, recording the batches they were given. */
function gated() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  const call = createStatementBatcher(async (reqs: number[]) => {
    batches.push(reqs);
    await new Promise<void>((r) => gates.push(r));
    if (reqs.includes(-1)) throw new Error('statement failed');
    return reqs.map((n) => n * 10);
  });
  const release = async () => {
    await new Promise((r) => setImmediate(r));
    gates.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { call, batches, release };
}

describe('statement batcher', () => {
  it('calls made in one turn share a statement; calls made while it runs wait and share the next; each caller gets its own answer', async () => {
    const { call, batches, release } = gated();
    const first = [call(1), call(2), call(3)];
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1, 2, 3]]);
    const second = [call(4), call(5)];
    await new Promise((r) => setImmediate(r));
    // One statement in flight: 4 and 5 wait for it.
    expect(batches).toEqual([[1, 2, 3]]);
    await release();
    expect(await Promise.all(first)).toEqual([10, 20, 30]);
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    await release();
    expect(await Promise.all(second)).toEqual([40, 50]);
  });

  it('a failed statement fails its own callers only', async () => {
    const { call, release } = gated();
    const failing = [call(-1), call(2)].map((p) =>
      p.then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    await new Promise((r) => setImmediate(r));
    const later = call(3);
    await release();
    expect(await Promise.all(failing)).toEqual(['statement failed', 'statement failed']);
    await release();
    expect(await later).toBe(30);
  });
});
