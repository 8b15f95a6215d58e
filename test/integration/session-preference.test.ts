/**
 * The deployment's preferred worker for new direct sessions (src/delivery/session-preference.ts):
 * one holder of its advisory lock per channel, found again when the holder goes; the others leave
 * news to it unless it steps aside.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { startSessionPreference, type SessionPreference } from '../../src/delivery/session-preference.js';
import { eventually } from '../support/harness.js';

const started: SessionPreference[] = [];
const start = (channel: string, busyShare?: number, leaveNews?: boolean) => {
  const p = startSessionPreference({ databaseUrl: inject('databaseUrl'), channel, deferMs: 100, retryMs: 50, busyShare, leaveNews });
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

  it('the workers not preferred leave news to the preferred one, which takes it', async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    const workers = [start(channel), start(channel), start(channel)];
    await Promise.all(workers.map((w) => w.ready));
    // Each sees the holder at its next look, every 50 ms here.
    await eventually(async () => workers.filter((w) => w.leavesNews()).length === 2);
    expect(workers.filter((w) => w.delayMs() === 0 && !w.leavesNews())).toHaveLength(1);
  });

  it("a preferred worker that stalls (its lock's connection quiet for three looks) is left no news until it speaks again", async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    // The holder as a stalled process looks from outside: its lock held on a connection that runs
    // statements (its looks) while it lives, and none while its event loop is stuck.
    const holder = new pg.Client({ connectionString: inject('databaseUrl') });
    await holder.connect();
    try {
      const name = `session-preference ${channel}`;
      expect((await holder.query(`SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS got`, [name])).rows[0].got).toBe(true);
      const other = start(channel);
      await other.ready;
      // Statements every 20 ms, as its looks would run, until stopped.
      const speaking = () => {
        let alive = true;
        const running = (async () => {
          while (alive) {
            await holder.query('SELECT 1');
            await new Promise((r) => setTimeout(r, 20));
          }
        })();
        return () => ((alive = false), running);
      };
      let stop = speaking();
      await eventually(async () => other.leavesNews());
      await stop();
      await eventually(async () => !other.leavesNews());
      // Not taken over: the stalled holder keeps its lock, and this worker asks after its delay.
      expect(other.delayMs()).toBe(100);
      stop = speaking();
      await eventually(async () => other.leavesNews());
      await stop();
    } finally {
      await holder.end();
    }
  });

  it('a worker told not to leave news (the due sweep off) asks for it, preferred worker or not', async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    const holder = start(channel);
    await holder.ready;
    const [leaving, asking] = [start(channel), start(channel, undefined, false)];
    await Promise.all([leaving.ready, asking.ready]);
    await eventually(async () => leaving.leavesNews());
    expect(asking.leavesNews()).toBe(false);
    expect(asking.delayMs()).toBe(100);
  });

  it('a worker alone, or of a deployment of its own, leaves news to nobody', async () => {
    const [a, b] = [start(`pref-${crypto.randomUUID()}`), start(`pref-${crypto.randomUUID()}`)];
    await Promise.all([a.ready, b.ready]);
    await new Promise((r) => setTimeout(r, 300));
    expect([a.leavesNews(), b.leavesNews()]).toEqual([false, false]);
  });

  it('when the preferred worker goes, another takes its place, told so, and stops leaving news', async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    const first = start(channel);
    await first.ready;
    const second = start(channel);
    let told = 0;
    second.onPreferred(() => told++);
    await second.ready;
    expect([first.delayMs(), second.delayMs()]).toEqual([0, 100]);
    await eventually(async () => second.leavesNews());
    expect(told).toBe(0);
    await first.close();
    await eventually(async () => second.delayMs() === 0);
    expect(second.leavesNews()).toBe(false);
    expect(told).toBe(1);
  });

  it('a preferred worker that stops hearing news steps aside: the others ask themselves until it hears again', async () => {
    const channel = `pref-${crypto.randomUUID()}`;
    // Never busy (a share of 100 cores): only listening moves its flag.
    const holder = start(channel, 100);
    await holder.ready;
    const other = start(channel);
    await other.ready;
    await eventually(async () => other.leavesNews());
    holder.listening(false);
    await eventually(async () => !other.leavesNews());
    holder.listening(true);
    await eventually(async () => other.leavesNews());
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
    // And shows it: the other worker does not leave news to it.
    await eventually(async () => !other.leavesNews(), 5_000);
  });

  it('a busy preferred worker alone still asks at once: nobody would take over', async () => {
    const p = start(`pref-${crypto.randomUUID()}`, 0);
    await p.ready;
    await new Promise((r) => setTimeout(r, 2_300));
    expect(p.delayMs()).toBe(0);
  });
});
