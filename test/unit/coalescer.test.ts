import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createCoalescer } from '../../src/runtime/coalescer.js';

/** A coalescer whose batches are recorded, each answered when the test says (`answer`). */
function recording(windowMs: number, leading: boolean) {
  const batches: string[][] = [];
  const answers: (() => void)[] = [];
  const c = createCoalescer<string, number>(
    (batch) => {
      batches.push([...batch.keys()]);
      return new Promise<void>((resolve) => answers.push(resolve));
    },
    windowMs,
    { leading },
  );
  return { c, batches, answer: () => answers.shift()!() };
}

describe('coalescer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends every key added within the window in one batch, at its end', async () => {
    const { c, batches } = recording(10, false);
    c.add('a', 1);
    await vi.advanceTimersByTimeAsync(5);
    c.add('b', 2);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(5);
    expect(batches).toEqual([['a', 'b']]);
  });

  it('with leading, sends the first key after a quiet spell on the next turn, and those within the window after it at its end', async () => {
    const { c, batches, answer } = recording(10, true);
    c.add('a', 1);
    c.add('b', 2);
    await vi.advanceTimersByTimeAsync(0);
    // The same turn's keys together, without waiting out the window.
    expect(batches).toEqual([['a', 'b']]);
    answer();
    await vi.advanceTimersByTimeAsync(1);
    c.add('c', 3);
    await vi.advanceTimersByTimeAsync(5);
    expect(batches).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(4);
    expect(batches).toEqual([['a', 'b'], ['c']]);
    answer();
    // Quiet again for a window: the next goes at once.
    await vi.advanceTimersByTimeAsync(20);
    c.add('d', 4);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toEqual([['a', 'b'], ['c'], ['d']]);
  });

  it('with leading, lets a caller send its keys itself only when they would go at once; the window then runs as after a batch', async () => {
    const { c, batches, answer } = recording(10, true);
    expect(c.claimLeading()).toBe(true);
    // Claimed: within the window nothing more is claimed, and keys added wait for its end.
    expect(c.claimLeading()).toBe(false);
    await vi.advanceTimersByTimeAsync(2);
    c.add('a', 1);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(8);
    expect(batches).toEqual([['a']]);
    // A batch out: not claimed, even once the window has run.
    await vi.advanceTimersByTimeAsync(20);
    expect(c.claimLeading()).toBe(false);
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(c.claimLeading()).toBe(true);
    // Keys waiting for a window's end: not claimed.
    c.add('b', 2);
    expect(c.claimLeading()).toBe(false);
    // Without leading, never.
    expect(recording(10, false).c.claimLeading()).toBe(false);
  });

  it('claims only after the quiet spell asked for, when it is longer than the window', async () => {
    const { c } = recording(10, true);
    expect(c.claimLeading(50)).toBe(true);
    await vi.advanceTimersByTimeAsync(20);
    expect(c.claimLeading(50)).toBe(false);
    await vi.advanceTimersByTimeAsync(30);
    expect(c.claimLeading(50)).toBe(true);
  });

  it('holds what is added while a batch is out, and sends it together as soon as that batch is answered', async () => {
    for (const leading of [false, true]) {
      const { c, batches, answer } = recording(10, leading);
      c.add('a', 1);
      await vi.advanceTimersByTimeAsync(10);
      expect(batches).toEqual([['a']]);
      c.add('b', 2);
      c.add('c', 3);
      await vi.advanceTimersByTimeAsync(50);
      expect(batches).toHaveLength(1);
      answer();
      await vi.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([['a'], ['b', 'c']]);
      answer();
    }
  });
});
