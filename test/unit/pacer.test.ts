import { describe, expect, it } from 'vitest';
import { paceIntervalMs, paceWaitMs } from '../../src/core/pacer.js';

/** Starts of `n` POSTs by lanes that each start as soon as the pacer allows, polling every `stepMs`. */
function simulate(n: number, lanes: number, perSecond: (t: number) => number | null, stepMs = 1): number[] {
  const starts: number[] = [];
  let last: number | undefined;
  for (let t = 0; starts.length < n; t += stepMs) {
    // Every free lane asks at each tick; only one may start per allowed slot.
    for (let l = 0; l < lanes && starts.length < n; l++) {
      if (paceWaitMs(last, t, perSecond(t)) === 0) {
        last = t;
        starts.push(t);
      }
    }
  }
  return starts;
}

const maxInWindow = (starts: number[], windowMs: number) =>
  Math.max(...starts.map((s) => starts.filter((x) => x >= s && x < s + windowMs).length));

describe('paceWaitMs', () => {
  it('lets the first POST and every POST without a limit go at once', () => {
    expect(paceWaitMs(undefined, 1000, 5)).toBe(0);
    expect(paceWaitMs(999, 1000, null)).toBe(0);
    expect(simulate(50, 50, () => null)).toEqual(Array(50).fill(0));
  });

  it('spaces POSTs 1000 / rate ms apart', () => {
    expect(paceIntervalMs(5)).toBe(200);
    expect(paceWaitMs(1000, 1000, 5)).toBe(200);
    expect(paceWaitMs(1000, 1150, 5)).toBe(50);
    expect(paceWaitMs(1000, 1200, 5)).toBe(0);
    expect(paceWaitMs(1000, 5000, 5)).toBe(0);
  });

  it('holds any 1-second window to the rate however many lanes ask', () => {
    for (const rate of [1, 5, 7, 50]) {
      const starts = simulate(40, 16, () => rate);
      expect(maxInWindow(starts, 1000)).toBeLessThanOrEqual(rate);
      // And it does not go slower than the rate either (each start lands on the next 1 ms tick).
      expect(starts.at(-1)).toBeLessThanOrEqual((39 * 1000) / rate + 39);
    }
  });

  it('applies a changed limit to the very next POST', () => {
    const starts = simulate(10, 4, (t) => (t < 2000 ? 1 : 100));
    // 1 per second until 2 s (0, 1000, 2000), then 10 ms apart.
    expect(starts.slice(0, 4)).toEqual([0, 1000, 2000, 2010]);
    expect(paceWaitMs(0, 10, 1)).toBe(990);
    expect(paceWaitMs(0, 10, 100)).toBe(0);
  });
});
