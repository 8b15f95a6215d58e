/**
 * The deployment's preferred worker for new direct sessions (src/delivery/session-preference.ts):
 * one holder of its advisory lock per channel, found again when the holder goes.
 */
import crypto from 'node:crypto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { startSessionPreference, type SessionPreference } from '../../src/delivery/session-preference.js';
import { eventually } from '../support/harness.js';

const started: SessionPreference[] = [];
const start = (channel: string, busyShare?: number) => {
  const p = startSessionPreference({ databaseUrl: inject('databaseUrl'), channel, deferMs: 100, retryMs: 50, busyShare });
  started.push(p);
  return p;
};

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

describe('session preference', () => {
  it('prefers exactly one worker of a deployment; the others defer', async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    const workers = [start(channel), start(channel), start(channel)];
    await Promise.all(workers.map((w) => w.ready));
    expect(workers.map((w) => w.delayMs()).sort((a, b) => a - b)).toEqual([0, 100, 100]);
  });

  it('another deployment on the same database prefers a worker of its own', async () => {
    const [a, b] = [start(`pref-${crypto.randomUUID()}`), start(`pref-${crypto.randomUUID()}`)];
    await Promise.all([a.ready, b.ready]);
    expect([a.delayMs(), b.delayMs()]).toEqual([0, 0]);
  });

  it('when the preferred worker goes, another takes its place', async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    const first = start(channel);
    await first.ready;
    const second = start(channel);
    await second.ready;
    expect([first.delayMs(), second.delayMs()]).toEqual([0, 100]);
    await first.close();
    await eventually(async () => second.delayMs() === 0);
  });

  // Any CPU at all counts as busy here (share 0): the rule of two busy seconds is src/core/busy-seconds.ts's.
  it('a busy preferred worker defers when another worker can take over', async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    const p = start(channel, 0);
    await p.ready;
    const other = start(channel);
    await other.ready;
    expect(p.delayMs()).toBe(0);
    await eventually(async () => p.delayMs() === 100, 5_000);
  });

  it('a busy preferred worker alone still asks at once: nobody would take over', async () => {
    const p = start(`pref-${crypto.randomUUID()}`, 0);
    await p.ready;
    await new Promise((r) => setTimeout(r, 2_300));
    expect(p.delayMs()).toBe(0);
  });
});
