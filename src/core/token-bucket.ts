/** A token bucket: `capacity` requests at once, refilled at `refillPerSecond`. Pure, clock passed in. */
export interface Bucket {
  tokens: number;
  updatedMs: number;
}

export function take(
  bucket: Bucket | undefined,
  nowMs: number,
  capacity: number,
  refillPerSecond: number,
): { bucket: Bucket; allowed: boolean; retryAfterSeconds: number } {
  const current = bucket ?? { tokens: capacity, updatedMs: nowMs };
  const refilled = Math.min(capacity, current.tokens + ((nowMs - current.updatedMs) / 1000) * refillPerSecond);
  if (refilled >= 1) return { bucket: { tokens: refilled - 1, updatedMs: nowMs }, allowed: true, retryAfterSeconds: 0 };
  const wait = refillPerSecond > 0 ? Math.ceil((1 - refilled) / refillPerSecond) : 60;
  return { bucket: { tokens: refilled, updatedMs: nowMs }, allowed: false, retryAfterSeconds: Math.max(1, wait) };
}
