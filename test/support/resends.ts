/** What a receiver may see twice after a worker was killed in the middle of a delivery session. */
import { expect } from 'vitest';
import type { ReceivedRequest } from './https-receiver.js';

/**
 * Every one of `expected` deliveries arrived, and the ones sent twice are only POSTs the dead
 * worker had made (`sentBefore`) and not recorded (`recordedBefore`): per lane of its session, the
 * one in flight and at most one answered whose record had not landed. Returns the keys sent twice.
 */
export function expectOnlyUnrecordedResent(
  received: ReceivedRequest[],
  o: { expected: number; sentBefore: Set<string>; recordedBefore: Set<string> },
): string[] {
  const counts = new Map<string, number>();
  for (const p of received) {
    const key = String(p.headers['x-idempotency-key']);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  expect(counts.size).toBe(o.expected);
  const twice = [...counts].filter(([, n]) => n > 1).map(([key]) => key);
  for (const key of twice) {
    expect(counts.get(key)).toBe(2);
    expect(o.sentBefore.has(key)).toBe(true);
    expect(o.recordedBefore.has(key)).toBe(false);
  }
  expect(twice.length).toBeLessThanOrEqual(2 * 16);
  return twice;
}
