/** `npm run bench -- --peer --runs=N` judges each target over the runs, not by one of them. */
import { describe, expect, it } from 'vitest';
import { PHASES, type PeerResults, type PhaseFigures, type SystemResult } from '../../bench/peer.js';
import { peerRatios, targetOf } from '../../bench/peer-summary.js';

const figures = (perSecond: number, p50Ms: number, p99Ms: number, cpuMsPerDelivery: number): PhaseFigures => ({
  events: 5_000,
  perSecond,
  p50Ms,
  p99Ms,
  maxMs: p99Ms,
  duplicates: 0,
  connections: 0,
  tail: { earlyShare: 0, p99AfterMs: p99Ms },
  cpuMsPerDelivery,
});

/** A system whose every phase has the same figures. */
const system = (f: PhaseFigures | undefined): SystemResult => ({
  system: 'x',
  startSeconds: 1,
  phases: f ? (Object.fromEntries(PHASES.map((k) => [k, f])) as SystemResult['phases']) : undefined,
  error: f ? undefined : 'failed',
});

const run = (project: PhaseFigures | undefined, peer: PhaseFigures | undefined): PeerResults => ({
  machine: { cpuModel: 'test', cores: 2, barePerSecond: 10_000, loadavg: [0, 0, 0] },
  events: 5_000,
  project: system(project),
  peer: system(peer),
  receiver: { badSignatures: 0, unknownPaths: 0, duplicates: 0 },
});

const row = (rows: ReturnType<typeof peerRatios>, phase: string, figure: string) =>
  rows.find((r) => r.phase === phase && r.figure === figure)!;

describe('peerRatios', () => {
  const peer = figures(1_000, 20, 50, 2);
  const rows = peerRatios([
    run(figures(2_100, 15, 40, 0.9), peer), // rate 2.1×, p50 0.75×, p99 0.8×, CPU 0.45×
    run(figures(1_600, 22, 60, 1.2), peer), // rate 1.6×, p50 1.1×, p99 1.2×, CPU 0.6×
    run(figures(1_900, 18, 50, 1.0), peer), // rate 1.9×, p50 0.9×, p99 1.0×, CPU 0.5×
  ]);

  it('gives each run its ratio and the median of the runs', () => {
    const rate = row(rows, 'warm', 'rate');
    expect(rate.ratios.map((x) => x!.toFixed(2))).toEqual(['2.10', '1.60', '1.90']);
    expect(rate.median).toBeCloseTo(1.9);
  });

  it('counts the runs that met each target, at its bound included', () => {
    expect([
      row(rows, 'warm', 'rate').met,
      row(rows, 'warm', 'p50').met,
      row(rows, 'warm', 'p99').met,
      row(rows, 'warm', 'cpu').met,
    ]).toEqual([1, 2, 2, 2]);
    // Over the hundred the rate's target is 1.5×: every run met it.
    expect(row(rows, 'manyWarm', 'rate').met).toBe(3);
  });

  it('sets no rate or CPU target for the paced sparse phase, only its latencies', () => {
    expect(targetOf('sparse', 'rate')).toBeUndefined();
    expect(targetOf('sparse', 'cpu')).toBeUndefined();
    expect(targetOf('sparse', 'p50')).toEqual({ atLeast: false, ratio: 1 });
    expect(row(rows, 'sparse', 'rate').met).toBe(0);
  });

  it('leaves out a run where either system failed, from the median and from the count', () => {
    const withFailure = peerRatios([
      run(figures(2_100, 15, 40, 0.9), peer),
      run(undefined, peer),
      run(figures(1_500, 15, 40, 0.9), undefined),
    ]);
    const rate = row(withFailure, 'cold', 'rate');
    expect(rate.ratios[1]).toBeUndefined();
    expect(rate.ratios[2]).toBeUndefined();
    expect(rate.measured).toBe(1);
    expect(rate.median).toBeCloseTo(2.1);
    expect(rate.met).toBe(1);
  });
});
