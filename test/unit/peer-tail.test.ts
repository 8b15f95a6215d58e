/** `npm run bench -- --peer` says whether a phase's tail is its start or its whole length. */
import { describe, expect, it } from 'vitest';
import { tailOf } from '../../bench/peer.js';

/** 1,000 deliveries published 1 ms apart, each with the latency `latency(n)` gives its index. */
function phase(latency: (n: number) => number) {
  const keys = Array.from({ length: 1_000 }, (_, n) => `k${n}`);
  const sentAt = new Map(keys.map((k, n) => [k, n]));
  return tailOf(keys, sentAt, (k) => latency(Number(k.slice(1))));
}

describe('tailOf', () => {
  it('puts a tail of the first deliveries at the start, and gives the p99 of the rest', () => {
    expect(phase((n) => (n < 20 ? 200 : 20 + (n % 10)))).toEqual({ earlyShare: 1, p99AfterMs: 29 });
  });

  it('finds a tail spread over the phase mostly after its start', () => {
    const tail = phase((n) => (n % 100 === 99 ? 150 : 20));
    expect(tail.earlyShare).toBe(0);
    expect(tail.p99AfterMs).toBe(150);
  });
});
