/**
 * The benchmark's hop breakdown (bench/hop-breakdown.ts): trace lines of several processes joined
 * per delivery, endpoint hops (NOTIFY sent, heard) matched to the first at or after its commit,
 * and the hops of the deliveries at p50 and p99 of latency.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hopBreakdown } from '../../bench/hop-breakdown.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** 100 deliveries to endpoint E, published 100 ms apart; delivery i waits `claimWait(i)` ms between heard and claimed. */
function traces(claimWait: (i: number) => number) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hop-breakdown-'));
  const api: string[] = [];
  const worker: string[] = [];
  const samples: { key: string; sent: number; receipt: number }[] = [];
  for (let i = 0; i < 100; i++) {
    const sent = 1_000_000 + i * 100;
    const key = `k${i}`;
    api.push(`${sent + 2} received ${key} E`, `${sent + 7} committed ${key} E`, `${sent + 9} notify E`);
    // A NOTIFY of an earlier batch, before this commit: not this delivery's.
    api.push(`${sent - 40} notify E`);
    worker.push(`${sent + 10} heard E`, `${sent + 10 + claimWait(i)} claimed ${key}`, `${sent + 11 + claimWait(i)} post ${key}`);
    samples.push({ key, sent, receipt: sent + 14 + claimWait(i) });
  }
  fs.writeFileSync(path.join(dir, '1.trace'), api.join('\n') + '\n');
  fs.writeFileSync(path.join(dir, '2.trace'), worker.join('\n') + '\n');
  return { dir, samples };
}

describe('hopBreakdown', () => {
  it('joins the processes’ lines into each hop of a delivery', () => {
    const { dir, samples } = traces(() => 1);
    const b = hopBreakdown(dir, samples)!;
    expect(b.traced).toBe(100);
    expect(b.p50).toMatchObject({
      'publish → API': 2,
      'group commit': 5,
      'commit → NOTIFY': 2,
      'NOTIFY → worker': 1,
      'worker → claim': 1,
      'claim → POST': 1,
      'POST → receipt': 3,
      latency: 15,
    });
  });

  it('puts the slow deliveries’ time in the hop where they waited: the p99 band, not the p50 one', () => {
    const { dir, samples } = traces((i) => (i % 50 === 49 ? 500 : 1));
    const b = hopBreakdown(dir, samples)!;
    expect(b.p50['worker → claim']).toBe(1);
    expect(b.p99['worker → claim']).toBe(500);
    expect(b.p99['group commit']).toBe(b.p50['group commit']);
  });

  it('has nothing to say about deliveries that were not traced', () => {
    const { dir, samples } = traces(() => 1);
    expect(
      hopBreakdown(
        dir,
        samples.map((s) => ({ ...s, key: `other-${s.key}` })),
      ),
    ).toBeUndefined();
  });
});
