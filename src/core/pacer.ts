/**
 * The per-endpoint throttle (`rate_limit`, POSTs per second): POSTs start evenly spaced, one every
 * 1000 / rate ms, with no burst, so no 1-second window holds more than `rate` starts (one more
 * only when a window's both edges fall on starts). A token bucket would let a full bucket go out
 * at once on top of the refill, up to twice the rate in one second, which a receiver sized for
 * the rate would refuse. Pure: the clock and the last start are passed in.
 */

/** The shortest gap between two POSTs to an endpoint limited to `perSecond`. */
export function paceIntervalMs(perSecond: number): number {
  return 1000 / perSecond;
}

/**
 * How long to wait before the next POST may start: 0 when it may start now (then its start is
 * the new `lastStartMs`). Without a limit, or before any POST, never. A limit changed meanwhile
 * applies to this very POST: the gap is measured with the current limit.
 */
export function paceWaitMs(lastStartMs: number | undefined, nowMs: number, perSecond: number | null): number {
  if (perSecond === null || lastStartMs === undefined) return 0;
  return Math.max(0, lastStartMs + paceIntervalMs(perSecond) - nowMs);
}
