/** The worker's maintenance Schedule is ensured beside its start, again and again until Temporal answers. */
import { describe, expect, it } from 'vitest';
import { keepEnsuring, type EnsureOutcome } from '../../src/worker/maintenance-schedule.js';

const unavailable = () => Object.assign(new Error('14 UNAVAILABLE: Not enough hosts to serve the request'), { code: 14 });

describe('keepEnsuring', () => {
  it('tries again after each failure, with a doubling wait, until the Schedule is ensured', async () => {
    const calls: number[] = [];
    let failures = 3;
    const outcome = await keepEnsuring(
      async (): Promise<EnsureOutcome> => {
        calls.push(performance.now());
        if (failures-- > 0) throw unavailable();
        return 'created';
      },
      new AbortController().signal,
      { firstWaitMs: 5, maxWaitMs: 1_000 },
    );
    expect(outcome).toBe('created');
    expect(calls).toHaveLength(4);
    // Waits of at least 5, 10 and 20 ms between the tries.
    const waits = calls.slice(1).map((t, i) => t - calls[i]!);
    expect(waits.map((w, i) => w >= 5 * 2 ** i - 1)).toEqual([true, true, true]);
  });

  it('stops waiting and answers undefined once aborted, without another try', async () => {
    const stop = new AbortController();
    let tries = 0;
    const ensured = keepEnsuring(
      async (): Promise<EnsureOutcome> => {
        tries++;
        throw unavailable();
      },
      stop.signal,
      { firstWaitMs: 60_000 },
    );
    await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    expect(await ensured).toBeUndefined();
    expect(tries).toBe(1);
  });
});
